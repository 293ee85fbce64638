package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// startRealMatchService builds the match service's command and runs it as
// a process (its packages are internal to its own module, so it cannot run
// in this test binary), on the standalone Redis and the given key set.
// It returns the process's gRPC address.
func startRealMatchService(t *testing.T, keyFile string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the match service; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "match")
	build := exec.Command("go", "build", "-o", bin, "github.com/fourkingdoms/fourkingdoms/services/match/cmd/match")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the match service: %v\n%s", err, out)
	}
	_, redisAddr := redistest.Standalone(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"GRPC_ADDR=127.0.0.1:0", "ADMIN_ADDR=127.0.0.1:0", "AUTH_KEYS_FILE="+keyFile, "INTERNAL_PLAINTEXT=true",
		"REDIS_ADDR="+redisAddr, "RATE_LIMIT_RPS=0", "MATCH_KEY_PREFIX="+redistest.Prefix(t))
	// Its own process group, killed with the test binary if that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"grpc_addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Addr
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		stopped := make(chan struct{})
		go func() { cmd.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-stopped
		}
		<-scanDone
	})
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the match service did not start")
		return ""
	}
}

// TestEndToEndRealMatchService runs the whole path against the real match
// service: four guests enqueue, are matched, and the match service knows
// the match with the players in the seats their tickets report.
func TestEndToEndRealMatchService(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("real")
	if err != nil {
		t.Fatal(err)
	}
	ratingAddr, _, _ := startBackends(t, keys) // the rating service stays a fake
	env := baseEnv(t, keys, ratingAddr)
	_, public := authtest.Files(t, keys) // the match service verifies only
	matchAddr := startRealMatchService(t, public)
	env["MATCH_ADDR"] = matchAddr
	_, redisAddr := redistest.Standalone(t)
	env["REDIS_ADDR"] = redisAddr
	conn := startService(t, env)
	authc := authv1.NewAuthServiceClient(conn)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	type player struct {
		id, token, ticket string
	}
	var players []player
	for i := range 4 {
		login, err := authc.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: fmt.Sprintf("real %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		enq, err := mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/1|15 d"}},
			grpc.PerRPCCredentials(auth.BearerToken(login.GetToken(), true)))
		if err != nil {
			t.Fatal(err)
		}
		players = append(players, player{login.GetPlayerId(), login.GetToken(), enq.GetTicket().GetTicketId()})
	}
	seats := map[gamev1.Seat]string{}
	var matchID string
	for _, p := range players {
		stream, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: p.ticket}, grpc.PerRPCCredentials(auth.BearerToken(p.token, true)))
		if err != nil {
			t.Fatal(err)
		}
		for {
			up, err := stream.Recv()
			if err != nil {
				t.Fatalf("watch %s: %v", p.id, err)
			}
			if m := up.GetMatched(); m != nil {
				if matchID != "" && m.GetMatchId() != matchID {
					t.Fatalf("%s in match %s, others in %s", p.id, m.GetMatchId(), matchID)
				}
				matchID = m.GetMatchId()
				seats[m.GetSeat()] = p.id
				break
			}
		}
	}
	if len(seats) != 4 {
		t.Fatalf("seats = %v, want four different ones", seats)
	}
	mconn, err := grpc.NewClient(matchAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer mconn.Close()
	got, err := matchv1.NewMatchServiceClient(mconn).GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: matchID},
		grpc.PerRPCCredentials(auth.BearerToken(players[0].token, true)))
	if err != nil {
		t.Fatalf("GetMatch(%s) on the real match service: %v", matchID, err)
	}
	m := got.GetMatch()
	if m.GetTimeControl().GetName() != "1|15 d" || m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
		t.Errorf("match = %v, want an active 1|15 d match", m)
	}
	for _, s := range m.GetSeats() {
		if seats[s.GetSeat()] != s.GetPlayer().GetPlayerId() || !strings.HasPrefix(s.GetPlayer().GetDisplayName(), "real ") {
			t.Errorf("seat %v holds %v, the ticket said %s", s.GetSeat(), s.GetPlayer(), seats[s.GetSeat()])
		}
	}
}
