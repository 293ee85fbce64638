package deploy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Set is the typed view of a rendered overlay that the policy checks read.
type Set struct {
	Workloads   []Workload
	Services    []corev1.Service
	ConfigMaps  []corev1.ConfigMap
	HPAs        []autoscalingv2.HorizontalPodAutoscaler
	PDBs        []policyv1.PodDisruptionBudget
	Policies    []networkingv1.NetworkPolicy
	Ingresses   []networkingv1.Ingress
	Deployments []appsv1.Deployment
	Others      []Object
}

// Workload is anything that runs pods: a Deployment, StatefulSet or Job.
type Workload struct {
	Kind, Name string
	Selector   *metav1.LabelSelector // nil for a Job (it selects its own pods)
	Replicas   *int32
	Pod        corev1.PodTemplateSpec
}

func (w Workload) String() string { return w.Kind + "/" + w.Name }

// Typed decodes the objects that the policies are about, strictly (an
// unknown field is an error here too).
func Typed(objs []Object) (*Set, error) {
	s := new(Set)
	for _, o := range objs {
		var err error
		switch o.APIVersion + " " + o.Kind {
		case "apps/v1 Deployment":
			var d appsv1.Deployment
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.Deployments = append(s.Deployments, d)
				s.Workloads = append(s.Workloads, Workload{"Deployment", d.Name, d.Spec.Selector, d.Spec.Replicas, d.Spec.Template})
			}
		case "apps/v1 StatefulSet":
			var d appsv1.StatefulSet
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.Workloads = append(s.Workloads, Workload{"StatefulSet", d.Name, d.Spec.Selector, d.Spec.Replicas, d.Spec.Template})
			}
		case "batch/v1 Job":
			var d batchv1.Job
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.Workloads = append(s.Workloads, Workload{"Job", d.Name, nil, nil, d.Spec.Template})
			}
		case "v1 Service":
			var d corev1.Service
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.Services = append(s.Services, d)
			}
		case "v1 ConfigMap":
			var d corev1.ConfigMap
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.ConfigMaps = append(s.ConfigMaps, d)
			}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			var d autoscalingv2.HorizontalPodAutoscaler
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.HPAs = append(s.HPAs, d)
			}
		case "policy/v1 PodDisruptionBudget":
			var d policyv1.PodDisruptionBudget
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.PDBs = append(s.PDBs, d)
			}
		case "networking.k8s.io/v1 NetworkPolicy":
			var d networkingv1.NetworkPolicy
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.Policies = append(s.Policies, d)
			}
		case "networking.k8s.io/v1 Ingress":
			var d networkingv1.Ingress
			if err = yaml.UnmarshalStrict(o.YAML, &d); err == nil {
				s.Ingresses = append(s.Ingresses, d)
			}
		default:
			s.Others = append(s.Others, o)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o, err)
		}
	}
	return s, nil
}

// Selects reports whether a label selector matches labels (matchLabels
// and the In, NotIn, Exists, DoesNotExist expressions). An empty selector
// matches everything.
func Selects(sel *metav1.LabelSelector, labels map[string]string) bool {
	if sel == nil {
		return false
	}
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	for _, e := range sel.MatchExpressions {
		v, has := labels[e.Key]
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if !has || !slices.Contains(e.Values, v) {
				return false
			}
		case metav1.LabelSelectorOpNotIn:
			if has && slices.Contains(e.Values, v) {
				return false
			}
		case metav1.LabelSelectorOpExists:
			if !has {
				return false
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if has {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// CheckWorkloads checks what every workload must have (the API server
// checks some of it too; this catches an edit before any server does):
// a selector that matches its pod template, the pod and container security
// settings, resource requests and a memory limit, and for long-running
// workloads readiness and liveness probes on declared ports.
func CheckWorkloads(s *Set) []error {
	var errs []error
	fail := func(w Workload, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", w, fmt.Sprintf(format, args...)))
	}
	for _, w := range s.Workloads {
		pod := w.Pod.Spec
		if w.Selector != nil && !Selects(w.Selector, w.Pod.Labels) {
			fail(w, "selector %v does not match the pod template labels %v", metav1.FormatLabelSelector(w.Selector), w.Pod.Labels)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			fail(w, "automountServiceAccountToken must be false (no workload calls the Kubernetes API)")
		}
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			fail(w, "pod securityContext.runAsNonRoot must be true")
		}
		podSeccomp := psc != nil && psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		long := w.Kind != "Job"
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			cf := func(format string, args ...any) { fail(w, "container %s: %s", c.Name, fmt.Sprintf(format, args...)) }
			sc := c.SecurityContext
			if sc == nil {
				cf("no securityContext")
				continue
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				cf("allowPrivilegeEscalation must be false")
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				cf("readOnlyRootFilesystem must be true")
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				cf("capabilities must drop ALL and add none")
			}
			if sc.Privileged != nil && *sc.Privileged {
				cf("privileged")
			}
			if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot || sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				cf("runs as root")
			}
			if !podSeccomp && (sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault) {
				cf("seccompProfile must be RuntimeDefault (pod or container)")
			}
			r := c.Resources
			if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() {
				cf("cpu and memory requests are required")
			}
			if r.Limits.Memory().IsZero() {
				cf("a memory limit is required")
			}
			if long {
				if c.ReadinessProbe == nil || c.LivenessProbe == nil {
					cf("readiness and liveness probes are required")
				}
				for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
					if p == nil {
						continue
					}
					port := probePort(p)
					if port.Type == intstr.String && !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port.StrVal }) {
						cf("probe on port %q, which the container does not declare", port.StrVal)
					}
				}
			}
		}
	}
	return errs
}

func probePort(p *corev1.Probe) intstr.IntOrString {
	switch {
	case p.HTTPGet != nil:
		return p.HTTPGet.Port
	case p.TCPSocket != nil:
		return p.TCPSocket.Port
	case p.GRPC != nil:
		return intstr.FromInt32(p.GRPC.Port)
	}
	return intstr.IntOrString{}
}

// CheckServices checks that each service process (label
// app.kubernetes.io/component=service) is configured as docs/operations.md
// says: probes on the admin port at /readyz and /healthz, GOMEMLIMIT at
// 80-95% of the memory limit, a grace period longer than the drain delay
// plus the shutdown timeout, and the key set it should have (private keys
// only where tokens are minted).
func CheckServices(s *Set, minters []string) []error {
	var errs []error
	cm := configMap(s, "fourkingdoms")
	for _, w := range s.Workloads {
		if w.Pod.Labels["app.kubernetes.io/component"] != "service" {
			continue
		}
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", w, fmt.Sprintf(format, args...)))
		}
		if cm == nil {
			fail("no ConfigMap fourkingdoms")
			continue
		}
		drain, err1 := parseSeconds(cm.Data["SHUTDOWN_DRAIN_DELAY"])
		timeout, err2 := parseSeconds(cm.Data["SHUTDOWN_TIMEOUT"])
		grace := w.Pod.Spec.TerminationGracePeriodSeconds
		switch {
		case err1 != nil || err2 != nil:
			fail("SHUTDOWN_DRAIN_DELAY / SHUTDOWN_TIMEOUT: %v %v", err1, err2)
		case grace == nil || float64(*grace) <= drain+timeout:
			fail("terminationGracePeriodSeconds %v must exceed SHUTDOWN_DRAIN_DELAY + SHUTDOWN_TIMEOUT (%gs)", deref(grace), drain+timeout)
		}
		for _, c := range w.Pod.Spec.Containers {
			checkProbe(fail, "readiness", c.ReadinessProbe, "/readyz")
			checkProbe(fail, "liveness", c.LivenessProbe, "/healthz")
			if p := portNumber(c, "admin"); p == 0 || fmt.Sprintf(":%d", p) != cm.Data["ADMIN_ADDR"] {
				fail("admin port %d differs from ADMIN_ADDR %q", p, cm.Data["ADMIN_ADDR"])
			}
			if p := portNumber(c, "grpc"); p == 0 || fmt.Sprintf(":%d", p) != cm.Data["GRPC_ADDR"] {
				fail("grpc port %d differs from GRPC_ADDR %q", p, cm.Data["GRPC_ADDR"])
			}
			lim := c.Resources.Limits.Memory()
			gml := envValue(c, "GOMEMLIMIT")
			if gml == "" {
				fail("GOMEMLIMIT not set")
			} else if q, err := resource.ParseQuantity(strings.TrimSuffix(gml, "B")); err != nil {
				fail("GOMEMLIMIT %q: %v", gml, err)
			} else if r := float64(q.Value()) / float64(lim.Value()); r < 0.80 || r > 0.95 {
				fail("GOMEMLIMIT %s is %.0f%% of the memory limit %s; keep it at 80-95%%", gml, 100*r, lim)
			}
			keys := secretOf(w.Pod.Spec, "auth-keys")
			want := "fourkingdoms-auth-public-keys"
			if slices.Contains(minters, w.Name) {
				want = "fourkingdoms-auth-keys"
			}
			if keys != want {
				fail("mounts key set %q, want %q (private keys only where tokens are minted)", keys, want)
			}
			if tls := secretOf(w.Pod.Spec, "tls"); tls != w.Name+"-tls" {
				fail("mounts TLS secret %q, want %s-tls", tls, w.Name)
			}
		}
	}
	return errs
}

// CheckServiceSelectors checks that each Service selects the pods of some
// workload and targets ports those pods declare.
func CheckServiceSelectors(s *Set) []error {
	var errs []error
	for _, svc := range s.Services {
		sel := &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}
		var pods []corev1.PodTemplateSpec
		for _, w := range s.Workloads {
			if len(svc.Spec.Selector) > 0 && Selects(sel, w.Pod.Labels) {
				pods = append(pods, w.Pod)
			}
		}
		if len(pods) == 0 {
			errs = append(errs, fmt.Errorf("service %s: selector %v matches no workload", svc.Name, svc.Spec.Selector))
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type != intstr.String {
				continue
			}
			for _, pod := range pods {
				if !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return portNumber(c, p.TargetPort.StrVal) != 0 }) {
					errs = append(errs, fmt.Errorf("service %s: targetPort %q is not a port of pods %v", svc.Name, p.TargetPort.StrVal, pod.Labels))
				}
			}
		}
	}
	return errs
}

// CheckAvailability checks the production shape: every Deployment has an
// HPA (min >= 2, min <= max) and no fixed replica count, a PDB that
// selects its pods, rolls out without losing capacity, and spreads over
// zones and nodes.
func CheckAvailability(s *Set) []error {
	var errs []error
	for _, h := range s.HPAs {
		if h.Spec.MinReplicas != nil && *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			errs = append(errs, fmt.Errorf("HPA %s: minReplicas %d above maxReplicas %d", h.Name, *h.Spec.MinReplicas, h.Spec.MaxReplicas))
		}
	}
	for _, d := range s.Deployments {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("deployment %s: %s", d.Name, fmt.Sprintf(format, args...)))
		}
		i := slices.IndexFunc(s.HPAs, func(h autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name
		})
		if i < 0 {
			fail("no HorizontalPodAutoscaler")
		} else if h := s.HPAs[i]; h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
			fail("HPA minReplicas below 2: one pod is no availability")
		}
		if d.Spec.Replicas != nil {
			fail("spec.replicas is set: every apply would reset what the HPA chose")
		}
		if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.String() != "0" {
			fail("a rollout must not stop a pod before its replacement is ready (rollingUpdate.maxUnavailable: 0)")
		}
		if !slices.ContainsFunc(s.PDBs, func(p policyv1.PodDisruptionBudget) bool { return Selects(p.Spec.Selector, d.Spec.Template.Labels) }) {
			fail("no PodDisruptionBudget selects its pods")
		}
		keys := map[string]bool{}
		for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
			if Selects(c.LabelSelector, d.Spec.Template.Labels) {
				keys[c.TopologyKey] = true
			}
		}
		if !keys["topology.kubernetes.io/zone"] || !keys["kubernetes.io/hostname"] {
			fail("pods must spread over topology.kubernetes.io/zone and kubernetes.io/hostname (constraints selecting its pods)")
		}
	}
	return errs
}

func checkProbe(fail func(string, ...any), what string, p *corev1.Probe, path string) {
	if p == nil || p.HTTPGet == nil {
		fail("%s probe must be an HTTP GET of %s on the admin port", what, path)
		return
	}
	if p.HTTPGet.Path != path || p.HTTPGet.Port.StrVal != "admin" {
		fail("%s probe is %s on port %s, want %s on admin", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
	}
}

func configMap(s *Set, name string) *corev1.ConfigMap {
	for i := range s.ConfigMaps {
		if s.ConfigMaps[i].Name == name {
			return &s.ConfigMaps[i]
		}
	}
	return nil
}

func portNumber(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func secretOf(pod corev1.PodSpec, volume string) string {
	for _, v := range pod.Volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

func parseSeconds(s string) (float64, error) {
	d, err := time.ParseDuration(s)
	return d.Seconds(), err
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}
