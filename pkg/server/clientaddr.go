package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Anonymous calls (GuestLogin, RefreshSession, public reads) are limited
// per client address. Behind a proxy every caller has the proxy's address
// (the web edge, an ingress, a cloud load balancer), so they would share
// one rate-limit bucket: a login storm of strangers would refuse everyone.
// The client address is therefore read from X-Forwarded-For, but only for
// hops that are trusted proxies (TRUSTED_PROXIES): the header is walked from
// the right, as each proxy appends the address it saw, skipping trusted
// hops, and the first untrusted address is the client's. A client cannot
// choose its own bucket by sending the header: what it sends sits left of
// the first proxy's entry, which is the address the proxy really saw.

// forwardedFor is the gRPC metadata key of the X-Forwarded-For header (the
// edge's reverse proxy sets it; grpc-go and the Connect transcoder pass
// HTTP headers as lower-case metadata).
const forwardedFor = "x-forwarded-for"

// trustedProxies is the set of addresses whose X-Forwarded-For entries are
// believed.
type trustedProxies []netip.Prefix

// parseTrustedProxies reads CIDR prefixes ("10.0.0.0/8") or single
// addresses ("127.0.0.1", "::1").
func parseTrustedProxies(list []string) (trustedProxies, error) {
	var tp trustedProxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			tp = append(tp, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: not an address or a CIDR prefix", s)
		}
		tp = append(tp, netip.PrefixFrom(a, a.BitLen()))
	}
	return tp, nil
}

func (tp trustedProxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range tp {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientHost returns the address of the client that made the call in ctx:
// the peer's, or, when the peer is a trusted proxy, the one it forwarded.
func (tp trustedProxies) clientHost(ctx context.Context) string {
	host := peerHost(ctx)
	if len(tp) == 0 {
		return host
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return tp.forwarded(host, md.Get(forwardedFor))
}

// forwarded walks the X-Forwarded-For values xff (as many headers as
// came, each a comma-separated list, in order) from the right, starting at
// the direct peer host, while the hop is a trusted proxy; it returns the
// first hop that is not (or the leftmost, when every hop is trusted). An
// entry that is not an address ends the walk at the last good hop: a
// broken header is no reason to give its sender a fresh bucket.
func (tp trustedProxies) forwarded(host string, xff []string) string {
	var hops []string
	for _, v := range xff {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(host)
		if err != nil || !tp.trusts(a) {
			return host
		}
		next, ok := hopAddr(hops[i])
		if !ok {
			return host
		}
		host = next
	}
	return host
}

// hopAddr reads one X-Forwarded-For entry: an address, possibly with a
// port or in brackets.
func hopAddr(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().String(), true
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(h); err == nil {
			return a.Unmap().String(), true
		}
	}
	return "", false
}

// peerHost is the host part of the direct peer's address.
func peerHost(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return p.Addr.String()
	}
	return host
}
