package deploy

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Endpoint is one side of a connection: a pod (its labels) in a
// namespace, or an IP address outside the cluster.
type Endpoint struct {
	Namespace string
	Labels    map[string]string
	IP        string
}

// Pod is an endpoint for pods with labels in namespace ns.
func Pod(ns string, labels map[string]string) Endpoint {
	return Endpoint{Namespace: ns, Labels: labels}
}

// IP is an endpoint outside the cluster.
func IP(addr string) Endpoint { return Endpoint{IP: addr} }

func (e Endpoint) String() string {
	if e.IP != "" {
		return e.IP
	}
	return fmt.Sprintf("%s%v", e.Namespace, e.Labels)
}

// Allowed reports whether the NetworkPolicies of namespace ns let a TCP
// or UDP connection from one endpoint to another on port through, with
// Kubernetes' semantics for the parts the manifests use: a pod selected by
// no policy of a direction is open in that direction; a selected pod
// accepts what some rule of a selecting policy allows. Only policies of ns
// are known: the other side of a connection leaving ns is taken as open.
func Allowed(policies []networkingv1.NetworkPolicy, ns string, from, to Endpoint, proto corev1.Protocol, port int32) bool {
	if from.IP == "" && from.Namespace == ns && !allows(policies, from, to, proto, port, networkingv1.PolicyTypeEgress) {
		return false
	}
	if to.IP == "" && to.Namespace == ns && !allows(policies, to, from, proto, port, networkingv1.PolicyTypeIngress) {
		return false
	}
	return true
}

// allows checks one direction for the pod self; peer is the other side.
func allows(policies []networkingv1.NetworkPolicy, self, peer Endpoint, proto corev1.Protocol, port int32, dir networkingv1.PolicyType) bool {
	selected := false
	for _, p := range policies {
		if !slices.Contains(p.Spec.PolicyTypes, dir) || !Selects(&p.Spec.PodSelector, self.Labels) {
			continue
		}
		selected = true
		if dir == networkingv1.PolicyTypeIngress {
			for _, r := range p.Spec.Ingress {
				if portsMatch(r.Ports, proto, port) && peersMatch(r.From, p.Namespace, peer) {
					return true
				}
			}
		} else {
			for _, r := range p.Spec.Egress {
				if portsMatch(r.Ports, proto, port) && peersMatch(r.To, p.Namespace, peer) {
					return true
				}
			}
		}
	}
	return !selected
}

func portsMatch(ports []networkingv1.NetworkPolicyPort, proto corev1.Protocol, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pr := corev1.ProtocolTCP
		if p.Protocol != nil {
			pr = *p.Protocol
		}
		if pr == proto && (p.Port == nil || p.Port.IntVal == port || p.EndPort != nil && port >= p.Port.IntVal && port <= *p.EndPort) {
			return true
		}
	}
	return false
}

func peersMatch(peers []networkingv1.NetworkPolicyPeer, policyNS string, e Endpoint) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			if e.IP == "" {
				continue
			}
			pfx, err1 := netip.ParsePrefix(p.IPBlock.CIDR)
			addr, err2 := netip.ParseAddr(e.IP)
			if err1 == nil && err2 == nil && pfx.Contains(addr) {
				return true
			}
		case e.IP != "":
		case p.NamespaceSelector != nil:
			nsLabels := map[string]string{"kubernetes.io/metadata.name": e.Namespace}
			if Selects(p.NamespaceSelector, nsLabels) && (p.PodSelector == nil || Selects(p.PodSelector, e.Labels)) {
				return true
			}
		case p.PodSelector != nil:
			if e.Namespace == policyNS && Selects(p.PodSelector, e.Labels) {
				return true
			}
		}
	}
	return false
}

// HasDefaultDeny reports whether a policy selects every pod of the
// namespace for both directions and allows nothing.
func HasDefaultDeny(policies []networkingv1.NetworkPolicy) bool {
	return slices.ContainsFunc(policies, func(p networkingv1.NetworkPolicy) bool {
		empty := len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0
		return empty && slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) &&
			slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) && len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0
	})
}

// OpenRules lists rules that allow any peer (no from/to): each would undo
// the default deny for the pods it selects.
func OpenRules(policies []networkingv1.NetworkPolicy) []error {
	var errs []error
	for _, p := range policies {
		for i, r := range p.Spec.Ingress {
			if len(r.From) == 0 {
				errs = append(errs, fmt.Errorf("NetworkPolicy/%s: ingress rule %d allows every source", p.Name, i))
			}
		}
		for i, r := range p.Spec.Egress {
			if len(r.To) == 0 {
				errs = append(errs, fmt.Errorf("NetworkPolicy/%s: egress rule %d allows every destination", p.Name, i))
			}
		}
	}
	return errs
}

// PodLabels returns the pod labels of the named workload.
func (s *Set) PodLabels(name string) (map[string]string, error) {
	for _, w := range s.Workloads {
		if w.Name == name {
			return w.Pod.Labels, nil
		}
	}
	return nil, fmt.Errorf("no workload %s", name)
}
