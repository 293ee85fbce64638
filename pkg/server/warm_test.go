package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

type warmKey struct{}

// goroutineID is the number in the first line of the calling goroutine's
// stack trace ("goroutine 7 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

func TestWarmPoolPassesCallsThrough(t *testing.T) {
	errFailed := errors.New("failed")
	tests := []struct {
		name     string
		closed   bool
		resp     any
		err      error
		wantResp any
	}{
		{name: "response", resp: "ok", wantResp: "ok"},
		{name: "error", err: errFailed},
		{name: "closed pool, response", closed: true, resp: "ok", wantResp: "ok"},
		{name: "closed pool, error", closed: true, err: errFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newWarmPool(2)
			defer p.close()
			if tt.closed {
				p.close()
			}
			ctx := context.WithValue(t.Context(), warmKey{}, "value")
			var gotReq, gotValue any
			resp, err := p.unary(ctx, "request", nil, func(ctx context.Context, req any) (any, error) {
				gotReq, gotValue = req, ctx.Value(warmKey{})
				return tt.resp, tt.err
			})
			if resp != tt.wantResp || !errors.Is(err, tt.err) {
				t.Errorf("unary = %v, %v; want %v, %v", resp, err, tt.wantResp, tt.err)
			}
			if gotReq != "request" || gotValue != "value" {
				t.Errorf("handler saw request %v and context value %v; want request and value", gotReq, gotValue)
			}
		})
	}
}

func TestWarmPoolReusesTheLastWorker(t *testing.T) {
	p := newWarmPool(4)
	defer p.close()
	caller := goroutineID()
	var ran []string
	for range 3 {
		if _, err := p.unary(t.Context(), nil, nil, func(context.Context, any) (any, error) {
			ran = append(ran, goroutineID())
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if ran[0] == caller {
		t.Fatalf("the call ran on the caller's goroutine %s, not on a worker", caller)
	}
	for i, id := range ran {
		if id != ran[0] {
			t.Errorf("call %d ran on goroutine %s, call 0 on %s: sequential calls should reuse one worker", i, id, ran[0])
		}
	}
}

func TestWarmPoolRunsCallsBeyondMaxOnTheirOwnGoroutine(t *testing.T) {
	p := newWarmPool(1)
	defer p.close()
	entered, release := make(chan string), make(chan struct{})
	busy := make(chan error)
	go func() {
		_, err := p.unary(t.Context(), nil, nil, func(context.Context, any) (any, error) {
			entered <- goroutineID()
			<-release
			return nil, nil
		})
		busy <- err
	}()
	worker := <-entered
	caller := goroutineID()
	var ran string
	if _, err := p.unary(t.Context(), nil, nil, func(context.Context, any) (any, error) {
		ran = goroutineID()
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if ran != caller {
		t.Errorf("with the only worker (goroutine %s) busy, the call ran on goroutine %s; want the caller's, %s", worker, ran, caller)
	}
}

// deepHandler uses about depth KB of stack, as a handler going through the
// match rules, protobuf and the Redis client does.
//
//go:noinline
func deepHandler(depth int) byte {
	var frame [1024]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return deepHandler(depth-1) + frame[depth%len(frame)]
}

// BenchmarkWarmPool runs each call on a fresh goroutine, as gRPC does when
// its stream workers are taken by long-lived streams, with the handler
// on that goroutine (no pool) or on a pool's warm worker. stack is the
// handler's stack use in KB: at 1 the pool's hand-off is all it adds.
//
//	go test ./server -run '^$' -bench WarmPool -count 6 | benchstat -col /pool -
func BenchmarkWarmPool(b *testing.B) {
	for _, kb := range []int{1, 24} {
		handler := func(context.Context, any) (any, error) { return deepHandler(kb - 1), nil }
		for _, pool := range []bool{false, true} {
			b.Run(fmt.Sprintf("stack=%dKB/pool=%t", kb, pool), func(b *testing.B) {
				p := newWarmPool(1)
				defer p.close()
				done := make(chan struct{})
				for b.Loop() {
					go func() {
						if pool {
							_, _ = p.unary(b.Context(), nil, nil, handler)
						} else {
							_, _ = handler(b.Context(), nil)
						}
						done <- struct{}{}
					}()
					<-done
				}
			})
		}
	}
}
