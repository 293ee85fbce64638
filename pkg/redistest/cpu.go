package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerCPU returns the CPU time (user + system) the Redis server behind
// rdb has used so far, from INFO cpu. Benchmarks report the difference
// over their timed part as the Redis cost per operation, which depends
// far less on what else the machine runs than wall-clock throughput does.
// On a cluster client it reads whichever node answers; use it with a
// standalone server.
func ServerCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					tb.Fatalf("INFO cpu: %q: %v", line, err)
				}
				total += x
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}
