package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

func TestMain(m *testing.M) {
	if os.Getenv(watchClientAddr) != "" {
		os.Exit(watchClient()) // BenchmarkWatchStreamMemory's client process
	}
	redistest.Main(m)
}

// env is one test environment: a Redis backend, a key set and a key prefix
// shared by the service instances the test starts.
type env struct {
	t       testing.TB
	backend backend
	keys    *auth.KeySet
	keyFile string
	prefix  string
}

var prefixSeq atomic.Int64

func newEnv(t testing.TB, b backend) *env {
	t.Helper()
	ks, file := authtest.PublicKeyFile(t)
	prefix := redistest.Prefix(t)
	return &env{t: t, backend: b, keys: ks, keyFile: file, prefix: prefix}
}

// The keeper's timing in test instances: short, so that flags and
// take-overs come fast.
const (
	keeperInterval = 50 * time.Millisecond
	keeperLeaseTTL = 500 * time.Millisecond
)

// baseEnv is the configuration of a test instance.
func (e *env) baseEnv() map[string]string {
	m := map[string]string{
		"GRPC_ADDR":              "127.0.0.1:0",
		"ADMIN_ADDR":             "127.0.0.1:0",
		"AUTH_KEYS_FILE":         e.keyFile,
		"INTERNAL_PLAINTEXT":     "true",
		"RATE_LIMIT_RPS":         "0",
		"MATCH_KEY_PREFIX":       e.prefix,
		"LOG_LEVEL":              "warn",
		"MATCH_KEEPER_INTERVAL":  keeperInterval.String(),
		"MATCH_KEEPER_LEASE_TTL": keeperLeaseTTL.String(),
	}
	for k, v := range e.backend.env {
		m[k] = v
	}
	return m
}

// instance is a service instance started in-process through run.
type instance struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// start runs an instance until the test ends (or stop is called).
func (e *env) start(overrides map[string]string) *instance {
	t := e.t
	t.Helper()
	vars := e.baseEnv()
	for k, v := range overrides {
		vars[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	inst := &instance{cancel: cancel, done: make(chan error, 1)}
	addrc := make(chan string, 1)
	go func() {
		inst.done <- run(ctx, nil, func(k string) string { return vars[k] }, io.Discard, func(s *server.Server) {
			addrc <- s.GRPCAddr().String()
		})
	}()
	select {
	case inst.addr = <-addrc:
	case err := <-inst.done:
		cancel()
		t.Fatalf("service did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("service did not start in time")
	}
	t.Cleanup(inst.stop)
	return inst
}

func (i *instance) stop() {
	i.cancel()
	if i.done != nil {
		<-i.done
		i.done = nil
	}
}

// token mints a token for a subject with a role.
func (e *env) token(subject string, role auth.Role) string {
	e.t.Helper()
	tok, _, err := e.keys.Sign(auth.Identity{Subject: subject, Role: role, DisplayName: subject}, time.Now(), time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// client dials an instance; token "" sends no credentials.
func (e *env) client(addr, token string) matchv1.MatchServiceClient {
	e.t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(auth.BearerToken(token, true)))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return matchv1.NewMatchServiceClient(conn)
}

// players are the ids of the four seats in test matches.
var players = [4]string{"p-red", "p-blue", "p-yellow", "p-green"}

// create creates a match through the API as a service.
func (e *env) create(addr string, mod func(*matchv1.CreateMatchRequest)) *matchv1.Match {
	e.t.Helper()
	req := &matchv1.CreateMatchRequest{RequestId: fmt.Sprintf("req-%d-%d", prefixSeq.Add(1), time.Now().UnixNano()),
		TimeControl: &gamev1.TimeControl{Name: "10+5"}}
	for s, p := range players {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: p, DisplayName: p}})
	}
	if mod != nil {
		mod(req)
	}
	resp, err := e.client(addr, e.token("matchmaker", auth.RoleService)).CreateMatch(e.t.Context(), req)
	if err != nil {
		e.t.Fatalf("CreateMatch: %v", err)
	}
	return resp.GetMatch()
}

// rdb returns a client of the environment's Redis.
func (e *env) rdb() redis.UniversalClient {
	return e.backend.client(e.t)
}

// fen4 builds a FEN4 position with no castling rights and no points:
// toMove "R", "B", "Y" or "G"; pieces like "rK:h1 bQ:n7".
func fen4(t testing.TB, toMove, pieces string) string {
	t.Helper()
	var grid [14][14]string
	for _, pl := range strings.Fields(pieces) {
		pc, sq, _ := strings.Cut(pl, ":")
		q, err := rules.ParseSquare(sq)
		if err != nil {
			t.Fatal(err)
		}
		grid[q.Rank()][q.File()] = pc
	}
	var rows []string
	for r := 13; r >= 0; r-- {
		var toks []string
		run := 0
		for f := range 14 {
			if grid[r][f] == "" {
				run++
				continue
			}
			if run > 0 {
				toks = append(toks, strconv.Itoa(run))
				run = 0
			}
			toks = append(toks, grid[r][f])
		}
		if run > 0 {
			toks = append(toks, strconv.Itoa(run))
		}
		rows = append(rows, strings.Join(toks, ","))
	}
	return toMove + "-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-" + strings.Join(rows, "/")
}

func isUnavailable(err error) bool { return status.Code(err) == codes.Unavailable }
