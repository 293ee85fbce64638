package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// startProcess runs the built service bin with env as its own process and
// returns its gRPC address and a function that kills it with SIGKILL.
func startProcess(t *testing.T, bin string, env map[string]string) (string, func()) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
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
		sc.Buffer(make([]byte, 64<<10), 1<<20)
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
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	kill := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		<-scanDone
	}
	t.Cleanup(func() {
		select {
		case <-waited:
			<-scanDone
		default:
			kill()
		}
	})
	select {
	case a := <-addr:
		return a, kill
	case <-time.After(30 * time.Second):
		t.Fatal("the matchmaking service did not start")
		return "", nil
	}
}

// TestStartTableSurvivesKill: the instance serving StartTable is killed
// with SIGKILL while CreateMatch has created the match but not answered;
// the host's retry on a new instance completes the same start: one match,
// the table started with it, the bot's ticket matched to it.
func TestStartTableSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the service; skipped with -short")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "matchmaking")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			keys, err := auth.GenerateKeySet("kill")
			if err != nil {
				t.Fatal(err)
			}
			backend, matchSvc, _ := startBackends(t, keys)
			stalled := make(chan struct{})
			var once sync.Once
			matchSvc.stall = func(ctx context.Context) {
				once.Do(func() {
					close(stalled)
					<-ctx.Done() // the caller dies with its connection
				})
			}
			env := baseEnv(t, keys, backend)
			name, value := kind.Env(t)
			env[name] = value
			as := func(id auth.Identity) grpc.CallOption {
				tok, _, err := keys.Sign(id, time.Now(), time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				return grpc.PerRPCCredentials(auth.BearerToken(tok, true))
			}
			dial := func(addr string) matchmakingv1.MatchmakingServiceClient {
				conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				return matchmakingv1.NewMatchmakingServiceClient(conn)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()

			addr, kill := startProcess(t, bin, env)
			mm := dial(addr)
			host := as(auth.Identity{Subject: "host", Role: auth.RolePlayer, DisplayName: "Host"})
			tb, err := mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: &gamev1.TimeControl{Name: "5+5"}}, host)
			if err != nil {
				t.Fatal(err)
			}
			code := tb.GetTable().GetCode()
			for i := range 2 {
				if _, err := mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: code}, as(auth.Identity{Subject: fmt.Sprintf("guest-%d", i), Role: auth.RolePlayer})); err != nil {
					t.Fatal(err)
				}
			}
			// Two lobby bots: the start takes one, a second start (if
			// there were one) could take the other.
			var botTickets []string
			for i := range 2 {
				bot := as(auth.Identity{Subject: fmt.Sprintf("bot-greedy-%d", i), Role: auth.RolePlayer, DisplayName: "Bot", Bot: true})
				e, err := mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "bots/greedy"}}, bot)
				if err != nil {
					t.Fatal(err)
				}
				botTickets = append(botTickets, e.GetTicket().GetTicketId())
			}

			startErr := make(chan error, 1)
			go func() {
				_, err := mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: code, FillWithBots: true}, host)
				startErr <- err
			}()
			select {
			case <-stalled:
			case err := <-startErr:
				t.Fatalf("StartTable returned before the kill: %v", err)
			case <-ctx.Done():
				t.Fatal("CreateMatch was never called")
			}
			kill()
			if err := <-startErr; err == nil {
				t.Fatal("StartTable succeeded on a killed instance")
			}

			addr2, _ := startProcess(t, bin, env)
			mm2 := dial(addr2)
			got, err := mm2.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: code, FillWithBots: true}, host)
			if err != nil {
				t.Fatalf("StartTable after the kill: %v", err)
			}
			matchSvc.mu.Lock()
			matches := len(matchSvc.byID)
			matchSvc.mu.Unlock()
			if matches != 1 {
				t.Errorf("%d matches created, want 1", matches)
			}
			st := got.GetTable()
			if st.GetState() != matchmakingv1.TableState_TABLE_STATE_STARTED || st.GetMatchId() != "match-1" {
				t.Errorf("table after the retry = %v; want started with match-1", st)
			}
			matched := 0
			for i, tk := range botTickets {
				// A bot whose ticket was reserved sees it matched.
				bot := as(auth.Identity{Subject: fmt.Sprintf("bot-greedy-%d", i), Role: auth.RolePlayer, Bot: true})
				s, err := mm2.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: tk}, bot)
				if err != nil {
					t.Fatal(err)
				}
				u, err := s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if m := u.GetMatched(); m != nil {
					matched++
					if m.GetMatchId() != "match-1" {
						t.Errorf("bot ticket matched to %s, want match-1", m.GetMatchId())
					}
				}
			}
			if matched != 1 {
				t.Errorf("%d bot tickets matched, want 1", matched)
			}
		})
	}
}
