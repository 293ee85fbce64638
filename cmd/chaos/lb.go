package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// balancer stands in for a Kubernetes Service in front of a service's
// instances: a TCP proxy on one loopback port that sends each new
// connection to a random instance whose gRPC health check answers
// SERVING (polled every 250 ms, as endpoints follow readiness). A
// connection stays with its instance until either side closes it, as
// kube-proxy's do: a killed instance resets its connections and the
// clients reconnect through the balancer; a stopped one stalls them.
type balancer struct {
	lis      net.Listener
	backends []*backend
	wg       sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

type backend struct {
	addr  string
	ready atomic.Bool
}

func newBalancer(addrs []string) (*balancer, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &balancer{lis: lis, conns: map[net.Conn]struct{}{}}
	for _, a := range addrs {
		b.backends = append(b.backends, &backend{addr: a})
	}
	return b, nil
}

func (b *balancer) addr() string { return b.lis.Addr().String() }

// run serves until ctx ends, then closes every connection.
func (b *balancer) run(ctx context.Context) {
	for _, be := range b.backends {
		b.wg.Go(func() { be.poll(ctx) })
	}
	b.wg.Go(func() {
		<-ctx.Done()
		b.lis.Close()
		b.mu.Lock()
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
	})
	for {
		c, err := b.lis.Accept()
		if err != nil {
			break
		}
		b.wg.Go(func() { b.proxy(ctx, c) })
	}
	b.wg.Wait()
}

func (be *backend) poll(ctx context.Context) {
	cc, err := grpc.NewClient(be.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		be.ready.Store(err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pick returns the backends to try, ready ones first in random order.
func (b *balancer) pick() []*backend {
	var ready, rest []*backend
	for _, i := range rand.Perm(len(b.backends)) {
		if be := b.backends[i]; be.ready.Load() {
			ready = append(ready, be)
		} else {
			rest = append(rest, be)
		}
	}
	return append(ready, rest...)
}

// track adds c to the connections closed at the end, or removes it.
func (b *balancer) track(c net.Conn, add bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		b.conns[c] = struct{}{}
	} else {
		delete(b.conns, c)
	}
}

func (b *balancer) proxy(ctx context.Context, c net.Conn) {
	defer c.Close()
	var up net.Conn
	for _, be := range b.pick() {
		d := net.Dialer{Timeout: time.Second}
		var err error
		if up, err = d.DialContext(ctx, "tcp", be.addr); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	defer up.Close()
	b.track(c, true)
	b.track(up, true)
	defer b.track(c, false)
	defer b.track(up, false)
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); up.Close(); done <- struct{}{} }()
	go func() { io.Copy(c, up); c.Close(); done <- struct{}{} }()
	<-done
	<-done
}
