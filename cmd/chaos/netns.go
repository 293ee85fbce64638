package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The namespace's addresses come from 198.18.0.0/16, part of the range
// reserved for benchmarking (RFC 2544) and never routed on the Internet.
// Each run takes the /29 its process id picks (so that two runs on one
// machine do not share addresses), puts its veth on the first /30 of it,
// and an unreachable route over the /29 keeps a stray packet from leaving
// the machine if the veth goes before the processes that use it.
func runAddrs(pid int) (host, ns, guard string) {
	b := pid % 8192 // /29 blocks in a /16
	base := fmt.Sprintf("198.18.%d.%d", b/32, (b%32)*8)
	last := (b % 32) * 8
	return fmt.Sprintf("198.18.%d.%d", b/32, last+1), fmt.Sprintf("198.18.%d.%d", b/32, last+2), base + "/29"
}

// netns is a network namespace joined to the root namespace by a veth pair,
// for the instances whose path to Redis (and from their clients) gets
// latency and packet loss.
type netns struct {
	name, hostIf, nsIf string
	// hostAddr is the root namespace's end (Redis binds it), nsAddr the
	// service namespace's, guard the unreachable route around both.
	hostAddr, nsAddr, guard string
	// shaping is how faults degrade the veth: shapeNetem where the kernel
	// has sch_netem, else shapeTBF.
	shaping string
	cmds    []string // what was run, for the report
}

// The two ways of degrading the veth. netem adds delay, jitter and random
// loss. Kernels built without sch_netem (this project's CI machines, a
// Firecracker VM, have tbf but no netem) get the nearest thing they allow:
// a token bucket of 1 Mbit/s on both ends, whose queue (up to 300 ms)
// delays every packet behind a burst and drops what overflows it, plus 5 %
// random loss by iptables' statistic match inside the namespace.
const (
	shapeNetem = "netem: delay 100ms ±30ms, 5% loss, both ways"
	shapeTBF   = "tbf 1mbit (queue up to 300ms) + 5% random loss (iptables statistic), both ways (no sch_netem in this kernel)"
)

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
	n.hostAddr, n.nsAddr, n.guard = runAddrs(os.Getpid())
	steps := [][]string{
		{"ip", "route", "replace", "unreachable", n.guard},
		{"ip", "netns", "add", n.name},
		{"ip", "link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf},
		{"ip", "link", "set", n.nsIf, "netns", n.name},
		{"ip", "addr", "add", n.hostAddr + "/30", "dev", n.hostIf},
		{"ip", "link", "set", n.hostIf, "up"},
		{"ip", "netns", "exec", n.name, "ip", "addr", "add", n.nsAddr + "/30", "dev", n.nsIf},
		{"ip", "netns", "exec", n.name, "ip", "link", "set", n.nsIf, "up"},
		{"ip", "netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := n.run(ctx, s...); err != nil {
			n.teardown()
			return nil, err
		}
	}
	// Find a way to degrade the link: try each, then take it off again.
	var errs []error
	for _, shaping := range []string{shapeNetem, shapeTBF} {
		n.shaping = shaping
		err := n.degrade(ctx)
		err = errors.Join(err, n.heal(ctx))
		if err == nil {
			return n, nil
		}
		errs = append(errs, err)
	}
	n.teardown()
	return nil, fmt.Errorf("no way to degrade the veth: %w", errors.Join(errs...))
}

func (n *netns) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	n.cmds = append(n.cmds, strings.Join(args, " "))
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// degrade slows the veth down and drops packets, both ways.
func (n *netns) degrade(ctx context.Context) error {
	inNs := func(args ...string) []string { return append([]string{"ip", "netns", "exec", n.name}, args...) }
	if n.shaping == shapeNetem {
		netem := []string{"netem", "delay", "100ms", "30ms", "loss", "5%"}
		return n.runAll(ctx,
			append([]string{"tc", "qdisc", "replace", "dev", n.hostIf, "root"}, netem...),
			inNs(append([]string{"tc", "qdisc", "replace", "dev", n.nsIf, "root"}, netem...)...))
	}
	tbf := []string{"tbf", "rate", "1mbit", "burst", "16kb", "latency", "300ms"}
	loss := []string{"-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP"}
	return n.runAll(ctx,
		append([]string{"tc", "qdisc", "replace", "dev", n.hostIf, "root"}, tbf...),
		inNs(append([]string{"tc", "qdisc", "replace", "dev", n.nsIf, "root"}, tbf...)...),
		inNs(append([]string{"iptables", "-A", "INPUT", "-i", n.nsIf}, loss...)...),
		inNs(append([]string{"iptables", "-A", "OUTPUT", "-o", n.nsIf}, loss...)...))
}

func (n *netns) runAll(ctx context.Context, cmds ...[]string) error {
	for _, c := range cmds {
		if err := n.run(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

// heal takes the shaping off both ends (the namespace's iptables rules
// are the run's own: flushing them touches nothing else).
func (n *netns) heal(ctx context.Context) error {
	errs := []error{
		n.run(ctx, "tc", "qdisc", "del", "dev", n.hostIf, "root"),
		n.run(ctx, "ip", "netns", "exec", n.name, "tc", "qdisc", "del", "dev", n.nsIf, "root"),
	}
	if n.shaping == shapeTBF {
		errs = append(errs, n.run(ctx, "ip", "netns", "exec", n.name, "iptables", "-F"))
	}
	return errors.Join(errs...)
}

// teardown deletes the namespace (and with it both veth ends) and the
// guard route, ignoring what was never made.
func (n *netns) teardown() {
	ctx := context.Background()
	_ = n.run(ctx, "ip", "netns", "del", n.name)
	_ = n.run(ctx, "ip", "link", "del", n.hostIf)
	_ = n.run(ctx, "ip", "route", "del", "unreachable", n.guard)
}
