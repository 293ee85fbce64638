package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The namespace's addresses: 198.18.0.0/15 is reserved for benchmarking
// (RFC 2544) and never routed on the Internet; the run only ever uses
// addresses on its own veth, and an unreachable route over the /24 keeps
// any stray packet from leaving the machine while the veth is down.
const (
	hostAddr   = "198.18.77.1" // the root namespace's end: Redis binds it
	nsAddr     = "198.18.77.2" // the service namespace's end
	netPrefix  = "/30"
	guardRoute = "198.18.77.0/24"
)

// netns is a network namespace joined to the root namespace by a veth pair,
// for the instances whose path to Redis (and from their clients) gets
// latency and packet loss.
type netns struct {
	name, hostIf, nsIf string
	cmds               []string // what was run, for the report
}

// setupNetns creates the namespace and the veth pair. It fails, with what
// failed, where the machine does not allow it (no root, no iproute2, a
// sandbox without network namespaces); the run then skips network faults.
func setupNetns(ctx context.Context) (*netns, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not root: network namespaces need CAP_NET_ADMIN")
	}
	for _, bin := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%s not found (Debian package iproute2): %w", bin, err)
		}
	}
	id := os.Getpid() % 100000
	n := &netns{name: fmt.Sprintf("fkchaos-%d", id), hostIf: fmt.Sprintf("fkc%dh", id), nsIf: fmt.Sprintf("fkc%dn", id)}
	steps := [][]string{
		{"ip", "route", "add", "unreachable", guardRoute},
		{"ip", "netns", "add", n.name},
		{"ip", "link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf},
		{"ip", "link", "set", n.nsIf, "netns", n.name},
		{"ip", "addr", "add", hostAddr + netPrefix, "dev", n.hostIf},
		{"ip", "link", "set", n.hostIf, "up"},
		{"ip", "netns", "exec", n.name, "ip", "addr", "add", nsAddr + netPrefix, "dev", n.nsIf},
		{"ip", "netns", "exec", n.name, "ip", "link", "set", n.nsIf, "up"},
		{"ip", "netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
		// netem must be loadable: try it once, then take it off.
		{"tc", "qdisc", "add", "dev", n.hostIf, "root", "netem", "delay", "1ms"},
		{"tc", "qdisc", "del", "dev", n.hostIf, "root"},
	}
	for _, s := range steps {
		if err := n.run(ctx, s...); err != nil {
			n.teardown()
			return nil, err
		}
	}
	return n, nil
}

func (n *netns) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	n.cmds = append(n.cmds, strings.Join(args, " "))
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// degrade puts netem with delay, jitter and loss on both ends of the veth.
func (n *netns) degrade(ctx context.Context, delay, jitter string, lossPct string) error {
	netem := []string{"netem", "delay", delay, jitter, "loss", lossPct + "%"}
	if err := n.run(ctx, append([]string{"tc", "qdisc", "replace", "dev", n.hostIf, "root"}, netem...)...); err != nil {
		return err
	}
	return n.run(ctx, append([]string{"ip", "netns", "exec", n.name, "tc", "qdisc", "replace", "dev", n.nsIf, "root"}, netem...)...)
}

// heal takes netem off both ends.
func (n *netns) heal(ctx context.Context) error {
	return errors.Join(
		n.run(ctx, "tc", "qdisc", "del", "dev", n.hostIf, "root"),
		n.run(ctx, "ip", "netns", "exec", n.name, "tc", "qdisc", "del", "dev", n.nsIf, "root"))
}

// teardown deletes the namespace (and with it both veth ends) and the
// guard route, ignoring what was never made.
func (n *netns) teardown() {
	ctx := context.Background()
	_ = n.run(ctx, "ip", "netns", "del", n.name)
	_ = n.run(ctx, "ip", "link", "del", n.hostIf)
	_ = n.run(ctx, "ip", "route", "del", "unreachable", guardRoute)
}
