package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ratingtest"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// TestInstancesShareTheStream runs two rating service processes (the
// binary production runs) on one stream of thousands of finished matches,
// redeliveries included, on standalone Redis and on the 6-node cluster.
// One instance is killed (SIGKILL) while it works; the other takes its
// unacknowledged events over. Every match is applied exactly once, nothing
// is dead-lettered, and the ratings equal a sequential replay of the
// matches in the order they were applied.
func TestInstancesShareTheStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service and runs two instances")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "rating")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, keyFile := authtest.PublicKeyFile(t)
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			name, value := kind.Env(t)
			stream, dead := prefix+"events", prefix+"dead"
			matches := publishMatches(t, rdb, stream, 3000)

			start := func(consumerName string) *exec.Cmd {
				cmd := exec.Command(bin)
				cmd.Env = append(os.Environ(),
					name+"="+value,
					"AUTH_KEYS_FILE="+keyFile, "INTERNAL_PLAINTEXT=true",
					"GRPC_ADDR="+redistest.FreeAddr(t), "ADMIN_ADDR="+redistest.FreeAddr(t),
					"RATING_STREAM="+stream, "RATING_DEAD_LETTER_STREAM="+dead, "RATING_KEY_PREFIX="+prefix,
					"RATING_CONSUMER="+consumerName, "RATING_BATCH=64", "RATING_BLOCK=100ms",
					"RATING_CLAIM_MIN_IDLE=500ms", "RATING_CLAIM_INTERVAL=100ms",
					"LOG_LEVEL=warn")
				var logs strings.Builder
				cmd.Stdout, cmd.Stderr = &logs, &logs
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if cmd.ProcessState == nil {
						cmd.Process.Kill()
						cmd.Wait()
					}
					if t.Failed() {
						t.Logf("instance %s:\n%s", consumerName, logs.String())
					}
				})
				return cmd
			}
			doomed := start("doomed")
			survivor := start("survivor")

			// Kill one instance once the work is under way, at a moment
			// when it holds events it read and did not acknowledge (frozen
			// with SIGSTOP until it does): the other takes them over.
			progress(t, rdb, stream, func(g redis.XInfoGroup) bool { return g.EntriesRead >= int64(len(matches)/4) })
			held := 0
			for attempt := 0; held == 0; attempt++ {
				if attempt == 1000 {
					t.Fatal("the instance to kill never held unacknowledged events")
				}
				if err := doomed.Process.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				p, err := rdb.XPending(t.Context(), stream, "rating").Result()
				if err != nil {
					t.Fatal(err)
				}
				for c, n := range p.Consumers { // the instance's workers are doomed-<i>
					if strings.HasPrefix(c, "doomed-") {
						held += int(n)
					}
				}
				if held == 0 {
					doomed.Process.Signal(syscall.SIGCONT)
					time.Sleep(time.Millisecond)
				}
			}
			if err := doomed.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			doomed.Wait()
			t.Logf("killed an instance holding %d unacknowledged events", held)
			progress(t, rdb, stream, func(g redis.XInfoGroup) bool {
				return g.EntriesRead >= int64(len(matches)+len(matches)/10) && g.Lag == 0 && g.Pending == 0
			})

			if err := survivor.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := survivor.Wait(); err != nil {
				t.Errorf("the surviving instance after SIGTERM: %v", err)
			}
			if n, err := rdb.XLen(t.Context(), dead).Result(); err != nil || n != 0 {
				t.Errorf("dead letters: %d, %v; want none", n, err)
			}
			cfg := store.DefaultConfig()
			cfg.Prefix = prefix
			policy := ladder.DefaultPolicy()
			ratingtest.CheckReplay(t, store.New(rdb, policy, cfg), policy, matches)
		})
	}
}

// publishMatches adds n finished matches among 40 players to stream, and a
// second copy of every tenth (a redelivery), and returns the matches.
func publishMatches(t *testing.T, rdb redis.UniversalClient, stream string, n int) []ladder.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	seats := []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN}
	finished := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	matches := make([]ladder.Result, n)
	pipe := rdb.Pipeline()
	var copies [][]any
	for i := range matches {
		ev := &eventsv1.MatchFinished{
			MatchId:    fmt.Sprintf("i%05d", i),
			RuleSet:    "fourkingdoms",
			FinishedAt: timestamppb.New(finished.Add(time.Duration(i) * time.Second)),
			Result:     &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
		}
		for p, k := range rng.Perm(40)[:4] {
			id := fmt.Sprintf("p%02d", k)
			ev.Players = append(ev.Players, &gamev1.SeatPlayer{Seat: seats[p], Player: &gamev1.Player{PlayerId: id}})
			ev.Result.Points = append(ev.Result.Points, &gamev1.SeatPoints{Seat: seats[p], Points: int32(40 - 10*p)})
			ev.Result.Ranking = append(ev.Result.Ranking, seats[p])
		}
		res, err := consumer.FromEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		matches[i] = res
		values, err := eventstream.MatchFinished().Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		pipe.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: values})
		if i%10 == 0 {
			copies = append(copies, values)
		}
	}
	for _, v := range copies {
		pipe.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: v})
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	return matches
}

// progress waits until the stream's one consumer group satisfies done.
func progress(t *testing.T, rdb redis.UniversalClient, stream string, done func(redis.XInfoGroup) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		groups, err := rdb.XInfoGroups(ctx, stream).Result()
		if err == nil && len(groups) == 1 && done(groups[0]) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumer group of %s: %+v, %v", stream, groups, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
