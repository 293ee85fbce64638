package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// BenchmarkCallDuringFlood measures one well-behaved caller's unary call
// while another caller floods the same server from 32 goroutines as fast
// as it can. With the default rate limit the flood is refused
// (RESOURCE_EXHAUSTED, RATE_LIMITED) in the interceptor before any
// handler runs, so what it costs the others is the refusals' CPU. Compare
// the ns/op of "flood" with "quiet" (no flood) of the same run:
//
//	go test -run '^$' -bench CallDuringFlood -benchtime 2000x -count 5 ./pkg/server/
func BenchmarkCallDuringFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		name := "quiet"
		if flood {
			name = "flood"
		}
		b.Run(name, func(b *testing.B) {
			h := start(b, nil)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var refused, served int64
			var mu sync.Mutex
			if flood {
				greedy := h.conn(b, "greedy")
				for range 32 {
					wg.Go(func() {
						var r, s int64
						for ctx.Err() == nil {
							_, err := unary(ctx, greedy, "flood")
							switch status.Code(err) {
							case codes.ResourceExhausted:
								r++
							case codes.OK:
								s++
							}
						}
						mu.Lock()
						refused, served = refused+r, served+s
						mu.Unlock()
					})
				}
			}
			// The others are many players calling now and then: each
			// call is a different player's (its own rate-limit bucket),
			// its token minted before the timer starts.
			others := h.conn(b, "")
			creds := make([]grpc.CallOption, b.N)
			for i := range creds {
				creds[i] = grpc.PerRPCCredentials(auth.BearerToken(h.token(b, fmt.Sprint("player-", i)), true))
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := testpb.NewTestServiceClient(others).UnaryCall(context.Background(), &testpb.SimpleRequest{}, creds[i]); err != nil {
					b.Fatalf("call %d of another caller: %v", i, err)
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			if flood {
				b.ReportMetric(float64(refused), "flood-refused")
				b.ReportMetric(float64(served), "flood-served")
			}
		})
	}
}
