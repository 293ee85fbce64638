package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestPrivateTableOfFourGuests is issue 21's evidence in the local run:
// one guest opens a private table with the terminal client, three guests
// (this test, with bot brains) join it by its code, the fk guest waits at
// the table with `fk table play`, the host starts it with `fk table
// start`, and all four play the match to its end.
func TestPrivateTableOfFourGuests(t *testing.T) {
	l := launch(t, func(string) string { return "" })
	l.fk("login", "--name", "Table Host")
	created := l.fk("table", "create", "--time", "1+0")
	code := regexp.MustCompile(`table ([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})`).FindStringSubmatch(created)
	if code == nil {
		t.Fatalf("fk table create printed no code:\n%s", created)
	}

	type played struct {
		final *matchv1.Match
		err   error
	}
	results := make(chan played, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		c, err := client.Dial(l.cl.Endpoints)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		login, err := c.Login(l.ctx, fmt.Sprintf("Friend %d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		c.SetToken(login.GetToken())
		// Dashes and case do not matter.
		typed := strings.ToLower(strings.ReplaceAll(code[1], "-", ""))
		if _, err := c.Matchmaking.JoinTable(l.ctx, &matchmakingv1.JoinTableRequest{Code: typed}); err != nil {
			t.Fatalf("friend %d joins: %v", i+1, err)
		}
		wg.Go(func() {
			found, err := c.WaitTable(l.ctx, code[1], login.GetPlayerId(), nil)
			if err != nil {
				results <- played{err: err}
				return
			}
			br := brain.New(brain.Greedy, rand.New(rand.NewPCG(uint64(i), 7)))
			final, err := c.PlayAuto(l.ctx, found.MatchID, found.Seat, func(_ context.Context, m *matchv1.Match) (string, error) {
				return br.Choose(brain.Turn{RuleSet: m.GetRuleSet(), FEN4: m.GetFen4(), Seat: rules.Seat(found.Seat - 1), Legal: m.GetLegalMoves(), Game: m.GetMatchId()})
			}, nil)
			results <- played{final, err}
		})
	}

	// The host waits at the table with fk, then starts it from a second fk.
	host := exec.CommandContext(l.ctx, l.fkBin, "table", "play", code[1], "--auto", "greedy", "--json")
	host.Env = l.fkEnv
	var hostOut, hostErr syncBuffer
	host.Stdout, host.Stderr = &hostOut, &hostErr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	if got := l.fk("table", "start", code[1]); !strings.Contains(got, "started match") {
		t.Fatalf("fk table start said:\n%s", got)
	}
	if err := host.Wait(); err != nil {
		t.Fatalf("fk table play: %v\n%s%s", err, hostOut.String(), hostErr.String())
	}
	var res result
	if err := json.Unmarshal([]byte(lastLine(hostOut.String())), &res); err != nil {
		t.Fatalf("fk table play printed %q: %v", hostOut.String(), err)
	}
	if res.Status != "MATCH_STATUS_FINISHED" || len(res.Ranking) != 4 || len(res.Players) != 4 {
		t.Errorf("the host's game = %+v, want finished with four players", res)
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil {
			t.Errorf("a friend's game: %v", r.err)
			continue
		}
		if !client.Over(r.final) || r.final.GetMatchId() != res.MatchID {
			t.Errorf("a friend's game ended in %v (match %s), want the host's match %s over", r.final.GetStatus(), r.final.GetMatchId(), res.MatchID)
		}
	}
	l.shutdown()
}
