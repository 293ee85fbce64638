package deploy

import (
	"strings"
	"testing"
)

// TestSchemasRefuseBrokenObjects: each mutation of a valid Deployment is
// reported at its path; the valid one is not.
func TestSchemasRefuseBrokenObjects(t *testing.T) {
	schemas, err := LoadSchemas(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	const valid = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
  labels: {a: b}
spec:
  replicas: 2
  selector: {matchLabels: {a: b}}
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: "25%"}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i:1
          ports: [{name: p, containerPort: 80}]
          resources: {requests: {cpu: 100m, memory: 1Gi}, limits: {memory: 2Gi}}
          readinessProbe: {httpGet: {path: /, port: p}}
`
	tests := []struct {
		name, old, new, want string
	}{
		{"valid", "", "", ""},
		{"unknown top-level field", "kind: Deployment\n", "kind: Deployment\nstatus2: {}\n", `.status2: unknown field "status2"`},
		{"unknown metadata field", "  name: x\n", "  name: x\n  nam: y\n", `.metadata.nam: unknown field`},
		{"unknown container field", "image: i:1\n", "image: i:1\n          imagePullPolicyy: Always\n", `containers[0].imagePullPolicyy: unknown field`},
		{"string for an integer", "replicas: 2", `replicas: "2"`, `.spec.replicas: string 2 where an integer is expected`},
		{"object for a string", "image: i:1", "image: {name: i}", `.image: object`},
		{"list for a map", "labels: {a: b}\nspec", "labels: [a]\nspec", `.metadata.labels: array where an object is expected`},
		{"bool for int-or-string", `maxUnavailable: "25%"`, "maxUnavailable: true", `maxUnavailable: value true matches none of the allowed forms`},
		{"bool for a quantity", "cpu: 100m", "cpu: true", `.requests.cpu:`},
		{"missing required name", "- name: c\n          image", "- image", `containers[0]: required field "name" missing`},
		{"label value not a string", "labels: {a: b}\nspec", "labels: {a: {b: c}}\nspec", `.metadata.labels.a: object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := valid
			if tt.old != "" {
				if !strings.Contains(y, tt.old) {
					t.Fatalf("fixture lacks %q", tt.old)
				}
				y = strings.Replace(y, tt.old, tt.new, 1)
			}
			o, err := Decode([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			errs := schemas.Validate(o)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("valid object refused: %v", errs)
				}
				return
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), tt.want) {
					return
				}
			}
			t.Errorf("want an error containing %q, got %v", tt.want, errs)
		})
	}
}
