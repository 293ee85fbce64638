package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Schemas validates objects against the OpenAPI v3 documents an API server
// publishes at /openapi/v3/<group path> (one JSON file per group-version
// in a directory, as `make deploy-check` dumps them).
//
// It checks what a server's strict field validation and schema checks
// catch before any controller logic: every field is known (no unknown or
// misspelt field, unless the schema preserves unknown fields), every value
// has its type, enums, required fields. It does not run the server's
// semantic validation (selectors, ranges, CEL rules): the policy tests and
// `make deploy-check` cover those.
type Schemas struct {
	// byGVK maps "group/version/Kind" to the document and schema name.
	byGVK map[string]gvkSchema
}

type gvkSchema struct {
	doc  *document
	name string
}

type document struct {
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

// schema is the part of an OpenAPI v3 schema object the checks read.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Properties           map[string]*schema `json:"properties"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Required             []string           `json:"required"`
	Enum                 []any              `json:"enum"`
	AllOf                []*schema          `json:"allOf"`
	AnyOf                []*schema          `json:"anyOf"`
	OneOf                []*schema          `json:"oneOf"`
	Nullable             bool               `json:"nullable"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString          bool               `json:"x-kubernetes-int-or-string"`
	EmbeddedResource     bool               `json:"x-kubernetes-embedded-resource"`
	GVK                  []struct {
		Group, Version, Kind string
	} `json:"x-kubernetes-group-version-kind"`
}

// LoadSchemas reads every *.json OpenAPI v3 document in dir.
func LoadSchemas(dir string) (*Schemas, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no OpenAPI documents in %s", dir)
	}
	s := &Schemas{byGVK: make(map[string]gvkSchema)}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d := new(document)
		if err := json.Unmarshal(b, d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for name, sc := range d.Components.Schemas {
			for _, g := range sc.GVK {
				// A kind is listed in several documents (meta types such as
				// DeleteOptions); the document of its own group-version wins.
				key := g.Group + "/" + g.Version + "/" + g.Kind
				if _, seen := s.byGVK[key]; !seen || strings.HasSuffix(f, docName(g.Group, g.Version)) {
					s.byGVK[key] = gvkSchema{doc: d, name: name}
				}
			}
		}
	}
	return s, nil
}

// docName is the file name `make deploy-check` gives the document of a
// group-version: api__v1.json, apis__apps__v1.json.
func docName(group, version string) string {
	if group == "" {
		return "api__" + version + ".json"
	}
	return "apis__" + group + "__" + version + ".json"
}

// Known reports whether the schemas describe apiVersion/kind.
func (s *Schemas) Known(apiVersion, kind string) bool {
	_, ok := s.byGVK[gvkKey(apiVersion, kind)]
	return ok
}

func gvkKey(apiVersion, kind string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	return group + "/" + version + "/" + kind
}

// Validate returns every violation of o against its schema, each naming
// the field path; an object of an unknown kind is one error.
func (s *Schemas) Validate(o Object) []error {
	g, ok := s.byGVK[gvkKey(o.APIVersion, o.Kind)]
	if !ok {
		return []error{fmt.Errorf("%s: no schema for %s %s", o, o.APIVersion, o.Kind)}
	}
	v := &validator{doc: g.doc}
	v.check(o.Map, g.doc.Components.Schemas[g.name], "")
	errs := make([]error, len(v.errs))
	for i, e := range v.errs {
		errs[i] = fmt.Errorf("%s: %s", o, e)
	}
	return errs
}

type validator struct {
	doc  *document
	errs []string
}

func (v *validator) fail(path, format string, args ...any) {
	if path == "" {
		path = "."
	}
	v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
}

func (v *validator) resolve(sc *schema) *schema {
	for sc != nil && sc.Ref != "" {
		name := strings.TrimPrefix(sc.Ref, "#/components/schemas/")
		next, ok := v.doc.Components.Schemas[name]
		if !ok {
			v.fail("", "unresolved reference %s", sc.Ref)
			return nil
		}
		sc = next
	}
	return sc
}

func (v *validator) check(val any, sc *schema, path string) {
	sc = v.resolve(sc)
	if sc == nil {
		return
	}
	for _, sub := range sc.AllOf {
		v.check(val, sub, path)
	}
	if alts := append(slices.Clone(sc.AnyOf), sc.OneOf...); len(alts) > 0 && !v.matchesAny(val, alts, path) {
		v.fail(path, "value %v matches none of the allowed forms", short(val))
	}
	if val == nil {
		if !sc.Nullable && sc.Type != "" {
			v.fail(path, "null where %s is expected", sc.Type)
		}
		return
	}
	if sc.IntOrString {
		switch x := val.(type) {
		case string:
		case json.Number:
			if strings.ContainsAny(x.String(), ".eE") {
				v.fail(path, "%s is not an integer or a string", x)
			}
		default:
			v.fail(path, "%s where an integer or a string is expected", kindOf(val))
		}
		return
	}
	switch sc.Type {
	case "object":
		m, ok := val.(map[string]any)
		if !ok {
			v.fail(path, "%s where an object is expected", kindOf(val))
			return
		}
		v.object(m, sc, path)
	case "array":
		a, ok := val.([]any)
		if !ok {
			v.fail(path, "%s where an array is expected", kindOf(val))
			return
		}
		for i, it := range a {
			v.check(it, sc.Items, fmt.Sprintf("%s[%d]", path, i))
		}
	case "string":
		if _, ok := val.(string); !ok {
			v.fail(path, "%s %v where a string is expected", kindOf(val), short(val))
		}
	case "integer":
		n, ok := val.(json.Number)
		if !ok || strings.ContainsAny(n.String(), ".eE") {
			v.fail(path, "%s %v where an integer is expected", kindOf(val), short(val))
		}
	case "number":
		if _, ok := val.(json.Number); !ok {
			v.fail(path, "%s %v where a number is expected", kindOf(val), short(val))
		}
	case "boolean":
		if _, ok := val.(bool); !ok {
			v.fail(path, "%s %v where a boolean is expected", kindOf(val), short(val))
		}
	case "":
		// No type: only the properties below, if any, constrain it.
		if m, ok := val.(map[string]any); ok && (len(sc.Properties) > 0 || sc.AdditionalProperties != nil) {
			v.object(m, sc, path)
		}
	}
	if len(sc.Enum) > 0 && !slices.ContainsFunc(sc.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(val) }) {
		v.fail(path, "%v is not one of %v", short(val), sc.Enum)
	}
}

func (v *validator) object(m map[string]any, sc *schema, path string) {
	for _, r := range sc.Required {
		if _, ok := m[r]; !ok {
			v.fail(path, "required field %q missing", r)
		}
	}
	var extra *schema
	extraAny := sc.PreserveUnknown
	if len(sc.AdditionalProperties) > 0 {
		switch string(sc.AdditionalProperties) {
		case "true":
			extraAny = true
		case "false":
		default:
			extra = new(schema)
			if err := json.Unmarshal(sc.AdditionalProperties, extra); err != nil {
				v.fail(path, "bad additionalProperties in schema: %v", err)
				return
			}
		}
	}
	// An embedded resource (a RawExtension-like field) always allows its
	// apiVersion, kind and metadata.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "." + k
		if ps, ok := sc.Properties[k]; ok {
			v.check(m[k], ps, p)
			continue
		}
		switch {
		case extra != nil:
			v.check(m[k], extra, p)
		case extraAny:
		case sc.EmbeddedResource && (k == "apiVersion" || k == "kind" || k == "metadata"):
		default:
			v.fail(p, "unknown field %q", k)
		}
	}
}

// matchesAny reports whether val satisfies one of the alternatives,
// without recording the failures of the others.
func (v *validator) matchesAny(val any, alts []*schema, path string) bool {
	for _, a := range alts {
		trial := &validator{doc: v.doc}
		trial.check(val, a, path)
		if len(trial.errs) == 0 {
			return true
		}
	}
	return false
}

func kindOf(val any) string {
	switch val.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", val)
}

func short(val any) string {
	s := fmt.Sprint(val)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
