package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fourkingdoms/fourkingdoms/pkg/edge"
)

// The overlays an operator deploys; each is rendered and checked.
var overlays = []string{"overlays/dev", "overlays/prod", "overlays/prod-gateway"}

// production overlays get the availability checks.
func production(overlay string) bool { return strings.HasPrefix(overlay, "overlays/prod") }

const namespace = "fourkingdoms"

var rendered sync.Map // overlay -> []Object

func render(t *testing.T, overlay string) []Object {
	t.Helper()
	if objs, ok := rendered.Load(overlay); ok {
		return objs.([]Object)
	}
	objs, err := Render(overlay)
	if err != nil {
		t.Fatal(err)
	}
	rendered.Store(overlay, objs)
	return objs
}

func typed(t *testing.T, overlay string) *Set {
	t.Helper()
	s, err := Typed(render(t, overlay))
	if err != nil {
		t.Fatalf("%s: %v", overlay, err)
	}
	return s
}

// TestOverlaysMatchServerSchemas validates every object of every overlay
// against the OpenAPI v3 schemas of the real API server (and the CRDs
// installed in it), committed in check/openapi by `make deploy-check`:
// unknown fields, wrong types, missing required fields, enums.
func TestOverlaysMatchServerSchemas(t *testing.T) {
	schemas, err := LoadSchemas(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ov := range overlays {
		t.Run(filepath.Base(ov), func(t *testing.T) {
			objs := render(t, ov)
			if len(objs) == 0 {
				t.Fatal("renders nothing")
			}
			for _, o := range objs {
				if !schemas.Known(o.APIVersion, o.Kind) {
					t.Errorf("%s: no schema for %s %s in check/openapi: add its group-version to scripts/deploy-check.sh and run make deploy-check", o, o.APIVersion, o.Kind)
					continue
				}
				for _, err := range schemas.Validate(o) {
					t.Error(err)
				}
			}
		})
	}
}

// TestBrokenFixturesRefused: each deliberately broken object in
// check/broken is refused by the checks of this package, with the message
// its "# want:" line names (make deploy-check sends the same files to the
// API server and expects its "# server:" message).
func TestBrokenFixturesRefused(t *testing.T) {
	schemas, err := LoadSchemas(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("check/broken/*.yaml")
	if len(files) < 4 {
		t.Fatalf("only %d broken fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := regexp.MustCompile(`(?m)^# want: (.*)$`).FindSubmatch(b)
			if want == nil {
				t.Fatal(`no "# want:" line`)
			}
			o, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			errs := schemas.Validate(o)
			if s, err := Typed([]Object{o}); err != nil {
				errs = append(errs, err)
			} else {
				errs = append(errs, CheckWorkloads(s)...)
				errs = append(errs, CheckAvailability(s)...)
			}
			if !strings.Contains(errors.Join(errs...).Error()+" ", string(want[1])) {
				t.Errorf("not refused with %q; errors: %v", want[1], errs)
			}
		})
	}
}

// TestWorkloadPolicies: security context, resources, probes, selectors,
// the services' settings and, in production, autoscaling, disruption
// budgets and topology spread: for every workload of every overlay.
func TestWorkloadPolicies(t *testing.T) {
	for _, ov := range overlays {
		t.Run(filepath.Base(ov), func(t *testing.T) {
			s := typed(t, ov)
			var names []string
			for _, w := range s.Workloads {
				names = append(names, w.Name)
			}
			for _, want := range []string{"match", "matchmaking", "rating", "web"} {
				if !slices.Contains(names, want) {
					t.Errorf("no workload %s (have %v)", want, names)
				}
			}
			errs := CheckWorkloads(s)
			errs = append(errs, CheckServices(s, []string{"matchmaking"})...)
			errs = append(errs, CheckServiceSelectors(s)...)
			if production(ov) {
				errs = append(errs, CheckAvailability(s)...)
				if h := hpaMetrics(s, "match"); !slices.Contains(h, "match_watch_streams") {
					t.Errorf("the match HPA scales on %v, want also the per-pod metric match_watch_streams", h)
				}
			}
			for _, err := range errs {
				t.Error(err)
			}
		})
	}
}

func hpaMetrics(s *Set, target string) []string {
	var out []string
	for _, h := range s.HPAs {
		if h.Spec.ScaleTargetRef.Name != target {
			continue
		}
		for _, m := range h.Spec.Metrics {
			switch {
			case m.Resource != nil:
				out = append(out, string(m.Resource.Name))
			case m.Pods != nil:
				out = append(out, m.Pods.Metric.Name)
			}
		}
	}
	return out
}

// TestPoliciesFailOnABrokenWorkload: the checks above are not vacuous: a
// workload stripped of each required setting is reported for it.
func TestPoliciesFailOnABrokenWorkload(t *testing.T) {
	s := typed(t, "overlays/prod")
	i := slices.IndexFunc(s.Deployments, func(d appsv1.Deployment) bool { return d.Name == "match" })
	if i < 0 {
		t.Fatal("no match Deployment")
	}
	w := &s.Workloads[slices.IndexFunc(s.Workloads, func(w Workload) bool { return w.Name == "match" })]
	c := &w.Pod.Spec.Containers[0]
	c.SecurityContext.ReadOnlyRootFilesystem = nil
	c.SecurityContext.Capabilities = nil
	c.ReadinessProbe = nil
	c.Resources.Limits = nil
	w.Pod.Spec.AutomountServiceAccountToken = nil
	w.Pod.Spec.TerminationGracePeriodSeconds = nil
	s.PDBs = nil
	s.HPAs = nil
	s.Deployments[i].Spec.Template.Spec.TopologySpreadConstraints = nil
	s.Deployments[i].Spec.Strategy.RollingUpdate = nil
	errs := errors.Join(append(append(CheckWorkloads(s), CheckServices(s, []string{"matchmaking"})...), CheckAvailability(s)...)...)
	if errs == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"readOnlyRootFilesystem", "capabilities", "readiness and liveness", "memory limit",
		"automountServiceAccountToken", "terminationGracePeriodSeconds", "no PodDisruptionBudget", "no HorizontalPodAutoscaler", "spread", "maxUnavailable"} {
		if !strings.Contains(errs.Error(), want) {
			t.Errorf("no error about %s in:\n%v", want, errs)
		}
	}
}

// TestNetworkPolicies: default deny, and exactly the flows each workload
// needs: DNS, the edge to the public services, Prometheus to the admin
// ports, matchmaking to match and rating, the services to Redis; and not
// the flows nobody needs.
func TestNetworkPolicies(t *testing.T) {
	edge := Pod("ingress-nginx", map[string]string{"app.kubernetes.io/name": "ingress-nginx"})
	gateway := Pod("gateway-system", map[string]string{"app": "gateway"})
	prometheus := Pod("monitoring", map[string]string{"app.kubernetes.io/name": "prometheus"})
	stranger := Pod("default", map[string]string{"app": "curious"})
	dns := Pod("kube-system", map[string]string{"k8s-app": "kube-dns"})
	redis := map[string]Endpoint{
		"overlays/dev":          Pod(namespace, map[string]string{"app.kubernetes.io/name": "redis-cluster"}),
		"overlays/prod":         IP("192.0.2.10"),
		"overlays/prod-gateway": IP("192.0.2.10"),
	}
	for _, ov := range overlays {
		t.Run(filepath.Base(ov), func(t *testing.T) {
			s := typed(t, ov)
			if !HasDefaultDeny(s.Policies) {
				t.Error("no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rules)")
			}
			for _, err := range OpenRules(s.Policies) {
				t.Error(err)
			}
			pod := func(name string) Endpoint {
				l, err := s.PodLabels(name)
				if err != nil {
					t.Fatal(err)
				}
				return Pod(namespace, l)
			}
			type flow struct {
				from, to Endpoint
				proto    corev1.Protocol
				port     int32
				allowed  bool
			}
			var flows []flow
			for _, w := range s.Workloads {
				flows = append(flows, flow{pod(w.Name), dns, corev1.ProtocolUDP, 53, true})
			}
			for _, svc := range []string{"match", "matchmaking", "rating"} {
				flows = append(flows,
					flow{edge, pod(svc), corev1.ProtocolTCP, 8080, true},
					flow{gateway, pod(svc), corev1.ProtocolTCP, 8080, true},
					flow{prometheus, pod(svc), corev1.ProtocolTCP, 9090, true},
					flow{pod(svc), redis[ov], corev1.ProtocolTCP, 6379, true},
					flow{edge, pod(svc), corev1.ProtocolTCP, 9090, false},
					flow{stranger, pod(svc), corev1.ProtocolTCP, 8080, false},
					flow{stranger, pod(svc), corev1.ProtocolTCP, 9090, false},
					flow{pod("web"), pod(svc), corev1.ProtocolTCP, 8080, false},
				)
			}
			flows = append(flows,
				flow{edge, pod("web"), corev1.ProtocolTCP, 8080, true},
				flow{pod("matchmaking"), pod("match"), corev1.ProtocolTCP, 8080, true},
				flow{pod("matchmaking"), pod("rating"), corev1.ProtocolTCP, 8080, true},
				flow{pod("match"), pod("rating"), corev1.ProtocolTCP, 8080, false},
				flow{pod("rating"), pod("match"), corev1.ProtocolTCP, 8080, false},
				flow{pod("match"), pod("matchmaking"), corev1.ProtocolTCP, 8080, false},
				flow{pod("web"), redis[ov], corev1.ProtocolTCP, 6379, false},
				flow{pod("match"), IP("203.0.113.7"), corev1.ProtocolTCP, 443, false},
			)
			if ov == "overlays/dev" {
				flows = append(flows,
					flow{pod("redis-cluster-create"), redis[ov], corev1.ProtocolTCP, 6379, true},
					flow{redis[ov], redis[ov], corev1.ProtocolTCP, 16379, true},
					flow{pod("match"), redis[ov], corev1.ProtocolTCP, 16379, false},
					flow{stranger, redis[ov], corev1.ProtocolTCP, 6379, false},
				)
			}
			for _, f := range flows {
				if got := Allowed(s.Policies, namespace, f.from, f.to, f.proto, f.port); got != f.allowed {
					t.Errorf("%s -> %s %s/%d: allowed %v, want %v", f.from, f.to, f.proto, f.port, got, f.allowed)
				}
			}
		})
	}
}

// publicServices reads the RPC services from proto/ and names the
// Deployment that serves each: the one of its package, except the guest
// login (AuthService), which matchmaking serves.
func publicServices(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("../proto/fourkingdoms/*/v1/*.proto")
	pkgRe := regexp.MustCompile(`(?m)^package (fourkingdoms\.(\w+)\.v1);`)
	svcRe := regexp.MustCompile(`(?m)^service (\w+) \{`)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pkg := pkgRe.FindSubmatch(b)
		for _, m := range svcRe.FindAllSubmatch(b, -1) {
			backend := string(pkg[2])
			if string(m[1]) == "AuthService" {
				backend = "matchmaking"
			}
			out["/"+string(pkg[1])+"."+string(m[1])+"/"] = backend
		}
	}
	if len(out) < 4 {
		t.Fatalf("found only %v in proto/", out)
	}
	return out
}

// TestRouting: the edge (Ingress, or HTTPRoute in the Gateway variant)
// serves the web app at / and sends every RPC path prefix of proto/ to its
// service, over TLS with HTTP/2 for the gRPC backends; the table is the
// one of pkg/edge (make run).
func TestRouting(t *testing.T) {
	want := publicServices(t)
	// The local edge of `make run` (pkg/edge) has the same table.
	edgeTable := map[string]string{}
	for _, r := range edge.Routes() {
		edgeTable[r.Prefix] = string(r.Backend)
	}
	if !maps.Equal(edgeTable, want) {
		t.Errorf("pkg/edge routes %v, proto/ gives %v: keep them and deploy/components equal", edgeTable, want)
	}
	want["/"] = "web"
	for _, ov := range overlays {
		t.Run(filepath.Base(ov), func(t *testing.T) {
			s := typed(t, ov)
			got := map[string]string{}
			hosts := map[string]bool{}
			for _, ing := range s.Ingresses {
				for _, r := range ing.Spec.Rules {
					hosts[r.Host] = true
					for _, p := range r.HTTP.Paths {
						got[p.Path] = p.Backend.Service.Name
						if p.Backend.Service.Name != "web" && ing.Annotations["nginx.ingress.kubernetes.io/backend-protocol"] != "GRPCS" {
							t.Errorf("Ingress/%s: %s goes to %s without backend-protocol GRPCS (HTTP/2 over TLS)", ing.Name, p.Path, p.Backend.Service.Name)
						}
					}
				}
			}
			for _, o := range s.Others {
				if o.Kind != "HTTPRoute" {
					continue
				}
				var r struct {
					Spec struct {
						Hostnames []string
						Rules     []struct {
							Matches     []struct{ Path struct{ Type, Value string } }
							BackendRefs []struct{ Name string }
						}
					}
				}
				if err := json.Unmarshal(mustJSON(t, o.Map), &r); err != nil {
					t.Fatal(err)
				}
				for _, h := range r.Spec.Hostnames {
					hosts[h] = true
				}
				for _, rule := range r.Spec.Rules {
					for _, m := range rule.Matches {
						if len(rule.BackendRefs) == 1 && m.Path.Type == "PathPrefix" {
							got[m.Path.Value] = rule.BackendRefs[0].Name
						}
					}
				}
			}
			if len(hosts) != 1 {
				t.Errorf("the routes use hosts %v, want one origin", hosts)
			}
			for prefix, backend := range want {
				if got[prefix] != backend {
					t.Errorf("%s routes to %q, want %q", prefix, got[prefix], backend)
				}
			}
			for prefix := range got {
				if _, ok := want[prefix]; !ok {
					t.Errorf("route %s is not an RPC service of proto/", prefix)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCertificates: every TLS Secret a pod mounts or the edge uses is
// issued by a cert-manager Certificate of the overlay, for the names the
// services call each other by.
func TestCertificates(t *testing.T) {
	for _, ov := range overlays {
		t.Run(filepath.Base(ov), func(t *testing.T) {
			s := typed(t, ov)
			certs := map[string][]string{}
			for _, o := range s.Others {
				if o.Kind != "Certificate" {
					continue
				}
				var c struct {
					Spec struct {
						SecretName string
						DNSNames   []string
					}
				}
				if err := json.Unmarshal(mustJSON(t, o.Map), &c); err != nil {
					t.Fatal(err)
				}
				certs[c.Spec.SecretName] = c.Spec.DNSNames
			}
			for _, w := range s.Workloads {
				if w.Pod.Labels["app.kubernetes.io/component"] != "service" {
					continue
				}
				names, ok := certs[secretOf(w.Pod.Spec, "tls")]
				if !ok {
					t.Errorf("%s mounts TLS secret %q that no Certificate issues", w, secretOf(w.Pod.Spec, "tls"))
				}
				if want := w.Name + "." + namespace + ".svc"; !slices.Contains(names, want) {
					t.Errorf("%s: certificate names %v lack %s", w, names, want)
				}
			}
			cm := configMap(s, "fourkingdoms")
			for _, k := range []string{"MATCH_ADDR", "RATING_ADDR"} {
				host, _, _ := strings.Cut(cm.Data[k], ":")
				svc, _, _ := strings.Cut(host, ".")
				if !slices.Contains(certs[svc+"-tls"], host) {
					t.Errorf("%s=%s: not a name of the %s certificate %v", k, cm.Data[k], svc, certs[svc+"-tls"])
				}
			}
			for _, ing := range s.Ingresses {
				if sec := ing.Annotations["nginx.ingress.kubernetes.io/proxy-ssl-secret"]; sec != "" {
					if _, ok := certs[strings.TrimPrefix(sec, namespace+"/")]; !ok {
						t.Errorf("Ingress/%s: proxy-ssl-secret %s is issued by no Certificate", ing.Name, sec)
					}
				}
			}
		})
	}
}

// TestImages: every image is a pinned tag, and the project's images are
// ghcr.io/fourkingdoms/<workload> (what `make images` builds).
func TestImages(t *testing.T) {
	for _, ov := range overlays {
		t.Run(filepath.Base(ov), func(t *testing.T) {
			for _, w := range typed(t, ov).Workloads {
				for _, c := range w.Pod.Spec.Containers {
					name, tag, ok := strings.Cut(c.Image, ":")
					if !ok || tag == "" || tag == "latest" {
						t.Errorf("%s: image %q has no pinned tag", w, c.Image)
					}
					if strings.HasPrefix(name, "ghcr.io/fourkingdoms/") && name != "ghcr.io/fourkingdoms/"+w.Name {
						t.Errorf("%s: image %s, want ghcr.io/fourkingdoms/%s", w, c.Image, w.Name)
					}
				}
			}
		})
	}
}

// requiredAlerts are the conditions issue 17 asks an operator be told of.
var requiredAlerts = []string{
	"FourKingdomsHighErrorRate", "FourKingdomsMakeMoveSlow", "FourKingdomsWatchStreamsDropped",
	"FourKingdomsRatingConsumerLag", "FourKingdomsRatingDeadLetters", "FourKingdomsRedisUnavailable",
	"FourKingdomsKeeperLeaseLost", "FourKingdomsNoKeeper",
}

// TestMonitoring: a ServiceMonitor per service that reaches its admin
// port; every required alert, each with a severity, a runbook section in
// docs/operations.md, and its expression on the service's dashboard (whose
// metrics the services' own tests check against /metrics).
func TestMonitoring(t *testing.T) {
	s := typed(t, "overlays/prod")
	for _, svc := range []string{"match", "matchmaking", "rating"} {
		found := false
		for _, o := range s.Others {
			if o.Kind != "ServiceMonitor" {
				continue
			}
			var sm struct {
				Spec struct {
					Selector  struct{ MatchLabels map[string]string }
					Endpoints []struct{ Port string }
				}
			}
			if err := json.Unmarshal(mustJSON(t, o.Map), &sm); err != nil {
				t.Fatal(err)
			}
			for _, k8s := range s.Services {
				if k8s.Name != svc || !Selects(&metav1.LabelSelector{MatchLabels: sm.Spec.Selector.MatchLabels}, k8s.Labels) {
					continue
				}
				for _, e := range sm.Spec.Endpoints {
					if slices.ContainsFunc(k8s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port && p.Port == 9090 }) {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("no ServiceMonitor scrapes port 9090 of Service %s", svc)
		}
	}
	runbook, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, o := range s.Others {
		if o.Kind != "PrometheusRule" {
			continue
		}
		var pr struct {
			Spec struct {
				Groups []struct {
					Rules []struct {
						Alert, Expr string
						Labels      map[string]string
					}
				}
			}
		}
		if err := json.Unmarshal(mustJSON(t, o.Map), &pr); err != nil {
			t.Fatal(err)
		}
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				seen = append(seen, r.Alert)
				if r.Labels["severity"] == "" {
					t.Errorf("alert %s has no severity", r.Alert)
				}
				if !strings.Contains(string(runbook), "\n### Alert: "+r.Alert+"\n") {
					t.Errorf("alert %s has no section \"### Alert: %s\" in docs/operations.md", r.Alert, r.Alert)
				}
				d, err := readDashboard("dashboards/" + r.Labels["service"] + ".json")
				if err != nil {
					t.Errorf("alert %s: %v", r.Alert, err)
					continue
				}
				if !slices.Contains(d, r.Expr) {
					t.Errorf("alert %s: its expression is on no panel of dashboards/%s.json", r.Alert, r.Labels["service"])
				}
			}
		}
	}
	for _, a := range requiredAlerts {
		if !slices.Contains(seen, a) {
			t.Errorf("no alert %s", a)
		}
	}
}

// TestDashboards: one valid Grafana dashboard per service, unique uids,
// every panel with a query and an id of its own (Grafana keys a panel's
// links, edits and "view panel" by its id; a duplicate opens the wrong one).
func TestDashboards(t *testing.T) {
	uids := map[string]string{}
	for _, svc := range []string{"match", "matchmaking", "rating"} {
		f := "dashboards/" + svc + ".json"
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string
			Title  string
			Panels []json.RawMessage
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: no uid or title", f)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", f, other, d.UID)
		}
		uids[d.UID] = f
		if dups := duplicatePanelIDs(d.Panels); len(dups) > 0 {
			t.Errorf("%s: panel ids used more than once: %v", f, dups)
		}
		exprs, err := readDashboard(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(exprs) < 10 {
			t.Errorf("%s: only %d queries", f, len(exprs))
		}
	}
}

// duplicatePanelIDs returns the ids that more than one panel (rows and the
// panels inside them included) of ps has.
func duplicatePanelIDs(ps []json.RawMessage) []int {
	seen := map[int]int{}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p struct {
				ID     *int
				Panels []json.RawMessage
			}
			if json.Unmarshal(raw, &p) != nil {
				continue // readDashboard reports it
			}
			if p.ID != nil {
				seen[*p.ID]++
			}
			walk(p.Panels)
		}
	}
	walk(ps)
	var dups []int
	for id, n := range seen {
		if n > 1 {
			dups = append(dups, id)
		}
	}
	slices.Sort(dups)
	return dups
}

// readDashboard returns every query of a dashboard, and fails for a panel
// (rows aside) without one.
func readDashboard(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type panel struct {
		Type, Title string
		Targets     []struct{ Expr string }
		Panels      []json.RawMessage
	}
	var d struct{ Panels []json.RawMessage }
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []string
	var walk func([]json.RawMessage) error
	walk = func(ps []json.RawMessage) error {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				return fmt.Errorf("%s: panel %q has no query", path, p.Title)
			}
			for _, tg := range p.Targets {
				out = append(out, tg.Expr)
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(d.Panels)
}

// schemaDir holds the API server's OpenAPI v3 documents (make deploy-check).
var schemaDir = envOr("FK_SCHEMA_DIR", "check/openapi")

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
