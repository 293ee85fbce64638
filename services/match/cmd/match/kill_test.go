package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

var binary struct {
	once sync.Once
	path string
	err  error
}

// serviceBinary builds cmd/match once per test binary.
func serviceBinary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "matchbin")
		if err != nil {
			binary.err = err
			return
		}
		binary.path = filepath.Join(dir, "match")
		out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// startProcess runs the service binary as a child process, with
// overrides of the test configuration, and waits until it answers.
func (e *env) startProcess(overrides map[string]string) (string, *exec.Cmd) {
	t := e.t
	t.Helper()
	addr := redistest.FreeAddr(t)
	vars := e.baseEnv()
	for k, v := range overrides {
		vars[k] = v
	}
	vars["GRPC_ADDR"], vars["ADMIN_ADDR"] = addr, redistest.FreeAddr(t)
	cmd := exec.Command(serviceBinary(t))
	cmd.Env = os.Environ()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := e.client(addr, e.token("probe", auth.RolePlayer))
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(50 * time.Millisecond) {
		_, err := c.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: "00000000000000000000ff"})
		if err != nil && !isUnavailable(err) {
			return addr, cmd
		}
	}
	t.Fatal("service process did not come up")
	return "", nil
}

// TestKilledInstance: an instance process is SIGKILLed in the middle of two
// games. The games continue through the other instance with every
// acknowledged move kept, and a clock that runs out while no instance
// serves its match is flagged within a second of its deadline.
func TestKilledInstance(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		addrA, procA := e.startProcess(nil)
		b := e.start(nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		long := e.create(addrA, nil)
		short := e.create(addrA, func(r *matchv1.CreateMatchRequest) {
			r.TimeControl = &gamev1.TimeControl{Name: "0.05+0"} // 3 s
			r.FirstMoveAbort = proto.Bool(false)                // first-move time losses, not an abort
			r.Seed = proto.Uint64(5)
		})
		onA, onB := e.seatClients(addrA), e.seatClients(b.addr)
		rng := rand.New(rand.NewPCG(8, 8))
		before := playMoves(t, onA, long.GetMatchId(), 10, rng)
		if _, err := onA[0].MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: short.GetMatchId(), Move: "h2-h3"}); err != nil {
			t.Fatal(err)
		}
		if err := procA.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = procA.Wait()

		// Blue's clock in the short game runs out with no instance serving it.
		// A service sees the live clocks (a spectator's view is a round behind).
		spec := e.client(b.addr, e.token("broadcaster", auth.RoleService))
		stream, err := spec.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: short.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		snap := recvN(t, stream, 1)[0].GetSnapshot()
		var deadline time.Time
		for _, c := range snap.GetClocks() {
			if c.GetRunning() {
				deadline = c.GetTurnDeadline().AsTime()
			}
		}
		if snap.GetToMove() != gamev1.Seat_SEAT_BLUE || deadline.IsZero() {
			t.Fatalf("short game snapshot: to move %v, deadline %v", snap.GetToMove(), deadline)
		}
		for {
			it, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for Blue's flag: %v", err)
			}
			if to := it.GetEvent().GetPlayerTimedOut(); to != nil {
				if to.GetSeat() != gamev1.Seat_SEAT_BLUE {
					t.Fatalf("flagged %v, want Blue", to.GetSeat())
				}
				if late := it.GetEvent().GetOccurredAt().AsTime().Sub(deadline); late < 0 || late > time.Second {
					t.Errorf("Blue flagged %v after the deadline", late)
				}
				break
			}
		}

		// The long game continues on B with every acknowledged move.
		got, err := onB[0].GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: long.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetMatch().GetVersion() != before.GetVersion() || got.GetMatch().GetFen4() != before.GetFen4() {
			t.Fatalf("after the kill: version %d, want %d", got.GetMatch().GetVersion(), before.GetVersion())
		}
		after := playMoves(t, onB, long.GetMatchId(), 8, rng)
		if after.GetPly() < before.GetPly()+8 && after.GetStatus() == matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
			t.Errorf("ply %d after 8 more moves from %d", after.GetPly(), before.GetPly())
		}
	})
}
