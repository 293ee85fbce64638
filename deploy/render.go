package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Object is one rendered Kubernetes object: its decoded form (JSON numbers
// kept as json.Number) and the identity it is reported under.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	Map                               map[string]any
	YAML                              []byte
}

// String names the object as kubectl does: kind/name.
func (o Object) String() string { return o.Kind + "/" + o.Name }

// Render builds the kustomization in dir (an overlay or a base) as
// `kubectl kustomize dir` does, and returns its objects in output order.
func Render(dir string) ([]Object, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	var out []Object
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("render %s: %s: %w", dir, r.CurId(), err)
		}
		o, err := Decode(y)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", dir, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Decode reads one YAML object.
func Decode(y []byte) (Object, error) {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return Object{}, fmt.Errorf("yaml: %w", err)
	}
	var m map[string]any
	if err := unmarshalNumbers(j, &m); err != nil {
		return Object{}, err
	}
	o := Object{Map: m, YAML: y}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	if md, ok := m["metadata"].(map[string]any); ok {
		o.Name, _ = md["name"].(string)
		o.Namespace, _ = md["namespace"].(string)
	}
	if o.APIVersion == "" || o.Kind == "" {
		return o, fmt.Errorf("object %q without apiVersion or kind", o.Name)
	}
	return o, nil
}

func unmarshalNumbers(j []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	return nil
}
