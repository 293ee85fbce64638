package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/workspace"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// webTables says whether the private tables' part of web/e2e/friends.mjs
// runs ("1": the matchmaking service implements the table RPCs).
const webTables = "1"

// webRematch says whether its rematch part runs ("1": the matchmaking
// service implements the rematch RPCs).
const webRematch = "1"

// webResult is what web/e2e/play.mjs prints on its RESULT line.
type webResult struct {
	MatchID  string `json:"matchId"`
	PlayerID string `json:"playerId"`
	Plies    uint32 `json:"plies"`
	MyMoves  int    `json:"myMoves"`
	Ranking  []int  `json:"ranking"`
	Rating   struct {
		Before int32  `json:"before"`
		After  int32  `json:"after"`
		Change int32  `json:"change"`
		Text   string `json:"text"`
	} `json:"rating"`
	Measured    json.RawMessage `json:"measured"`
	Screenshots []string        `json:"screenshots"`
}

// TestWebClientPlaysWatchesAndSurvivesADrop is the web client's end-to-end
// test (issue 16): `make run`'s processes on free ports, and headless
// Chromium (Debian's /usr/bin/chromium, driven by playwright-core in
// web/e2e/play.mjs) opening the edge's URL. A guest plays a whole game
// against three bots by clicking on the board, a phone-sized second
// context watches it by link, and the player's context goes offline twice
// (right after a move, and before one); the script checks the move lists
// (equal, gap-free, the moves of the drops once each) and the summary.
// Here the result is checked against the services: the game the page
// showed is the match's whole game, and the rating change it showed is
// the one the rating service recorded. Screenshots and measurements go to
// web/test-artifacts (git-ignored).
func TestWebClientPlaysWatchesAndSurvivesADrop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the cluster and a browser")
	}
	web, node := webTestTools(t)

	l := launch(t, func(string) string { return "" })
	if l.cl.Web == "" {
		t.Fatal("the launcher reports no web address")
	}
	artifacts := filepath.Join(web, "test-artifacts")
	cmd := exec.CommandContext(l.ctx, node, "e2e/play.mjs")
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "BASE_URL="+l.cl.Web, "QUEUE=fourkingdoms/1+0", "ARTIFACTS="+artifacts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser test: %v\n%s%s\n%s", err, out, stderr.String(), l.diagnostics())
	}
	var res webResult
	found := false
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatalf("RESULT line %q: %v", line, err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("the browser test printed no RESULT line:\n%s%s", out, stderr.String())
	}
	t.Logf("browser test:\n%s", out)

	keys, err := auth.LoadFile(l.cl.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(l.cl.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok, _, err := keys.Sign(auth.Identity{Subject: "web-e2e", Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.SetToken(tok)

	// The page's move list is the whole game: as many moves as plies.
	m, err := c.Match.GetMatch(l.ctx, &matchv1.GetMatchRequest{MatchId: res.MatchID})
	if err != nil {
		t.Fatalf("get match %s: %v", res.MatchID, err)
	}
	if m.GetMatch().GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED {
		t.Errorf("match %s is %v, want finished", res.MatchID, m.GetMatch().GetStatus())
	}
	if got := m.GetMatch().GetPly(); got != res.Plies {
		t.Errorf("the page listed %d moves; the match has %d plies", res.Plies, got)
	}
	var ranking []int
	for _, s := range m.GetMatch().GetResult().GetRanking() {
		ranking = append(ranking, int(s))
	}
	if !slices.Equal(ranking, res.Ranking) {
		t.Errorf("the page's ranking (seats) %v, the match's %v", res.Ranking, ranking)
	}

	// The rating change the summary showed is the rating service's.
	r := l.getRating(res.PlayerID)
	if r.GetDisplayRating() != res.Rating.After || r.GetGamesPlayed() != 1 {
		t.Errorf("GetRating: %d after %d games; the page showed %q", r.GetDisplayRating(), r.GetGamesPlayed(), res.Rating.Text)
	}
	hist, err := l.rating.GetRatingHistory(l.ctx, &ratingv1.GetRatingHistoryRequest{RuleSet: ruleSet, PlayerId: res.PlayerID})
	if err != nil {
		t.Fatal(err)
	}
	if e := hist.GetEntries(); len(e) != 1 || e[0].GetMatchId() != res.MatchID || e[0].GetChange() != res.Rating.Change || e[0].GetRatingBefore() != res.Rating.Before {
		t.Errorf("rating history %v; the page showed %q for match %s", e, res.Rating.Text, res.MatchID)
	}

	report, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(artifacts, "report.json"), report, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("measured (not asserted): %s", res.Measured)
	t.Logf("screenshots: %s", strings.Join(res.Screenshots, ", "))
}

// webTestTools returns the web directory and node for a browser test, or
// skips the test (fails on CI) when chromium, playwright-core or the built
// app is missing.
func webTestTools(t *testing.T) (web, node string) {
	t.Helper()
	repo, err := workspace.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	web = filepath.Join(repo, "web")
	for _, need := range []struct{ path, how string }{
		{"/usr/bin/chromium", "make chromium (Debian: apt-get install -y chromium)"},
		{filepath.Join(web, "node_modules", "playwright-core"), "scripts/web.sh deps (npm ci in web/)"},
		{filepath.Join(web, "dist", "index.html"), "make web"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			// make test installs both first; only a bare `go test` lacks them.
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing: %s", need.path, need.how)
			}
			t.Skipf("%s is missing: %s (make test does it)", need.path, need.how)
		}
	}
	node, err = exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for the browser test: %v", err)
	}

	return web, node
}

// TestWebClientAccountsAndTables is the browser test of the account and
// private-table flows (issue 21; web/e2e/friends.mjs): a guest renames
// (the page keeps the rotated tokens) and signs out (the server refuses
// the refresh token afterwards); a host opens a private table, a friend
// joins by the invite link in a second browser context, the host starts
// with a bot filling the free seat and both pages land in the same match,
// which the match service confirms has both of them; four players of
// another table accept a rematch and land in its new match, which has the
// same players with seats rotated by one.
func TestWebClientAccountsAndTables(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the cluster and a browser")
	}
	web, node := webTestTools(t)
	// On a real Redis (standalone), as the services run in production.
	name, value := redistest.Kinds()[0].Env(t)
	l := launch(t, func(k string) string {
		if k == name {
			return value
		}
		return ""
	})
	cmd := exec.CommandContext(l.ctx, node, "e2e/friends.mjs")
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "BASE_URL="+l.cl.Web, "ARTIFACTS="+filepath.Join(web, "test-artifacts"), "TABLES="+webTables, "REMATCH="+webRematch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser test: %v\n%s%s\n%s", err, out, stderr.String(), l.diagnostics())
	}
	var res struct {
		Account struct {
			PlayerID string `json:"playerId"`
		} `json:"account"`
		Tables *struct {
			MatchID  string `json:"matchId"`
			HostID   string `json:"hostId"`
			FriendID string `json:"friendId"`
		} `json:"tables"`
		Rematch *struct {
			MatchID    string `json:"matchId"`
			NewMatchID string `json:"newMatchId"`
		} `json:"rematch"`
	}
	found := false
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatalf("RESULT line %q: %v", line, err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("the browser test printed no RESULT line:\n%s%s", out, stderr.String())
	}
	t.Logf("browser test:\n%s", out)
	if webTables != "1" {
		return
	}
	if res.Tables == nil {
		t.Fatal("the browser test reports no table")
	}
	// The match the pages showed is the table's: both players are in it.
	keys, err := auth.LoadFile(l.cl.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(l.cl.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok, _, err := keys.Sign(auth.Identity{Subject: "web-e2e", Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.SetToken(tok)
	m, err := c.Match.GetMatch(l.ctx, &matchv1.GetMatchRequest{MatchId: res.Tables.MatchID})
	if err != nil {
		t.Fatalf("get match %s: %v", res.Tables.MatchID, err)
	}
	var ids []string
	for _, s := range m.GetMatch().GetSeats() {
		ids = append(ids, s.GetPlayer().GetPlayerId())
	}
	for _, want := range []string{res.Tables.HostID, res.Tables.FriendID} {
		if !slices.Contains(ids, want) {
			t.Errorf("match %s has players %v; the page's player %s is not one", res.Tables.MatchID, ids, want)
		}
	}
	if webRematch != "1" {
		return
	}
	if res.Rematch == nil {
		t.Fatal("the browser test reports no rematch")
	}
	// The match the four pages went to is the rematch: the same players,
	// each one seat on (Red's player plays Blue, and so on).
	seatsOf := func(id string) map[int32]string {
		m, err := c.Match.GetMatch(l.ctx, &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatalf("get match %s: %v", id, err)
		}
		out := map[int32]string{}
		for _, s := range m.GetMatch().GetSeats() {
			out[int32(s.GetSeat())] = s.GetPlayer().GetPlayerId()
		}
		return out
	}
	before, after := seatsOf(res.Rematch.MatchID), seatsOf(res.Rematch.NewMatchID)
	for seat := int32(1); seat <= 4; seat++ {
		if next := seat%4 + 1; after[next] != before[seat] || before[seat] == "" {
			t.Errorf("rematch %s: seat %d has %q; %q played seat %d in %s", res.Rematch.NewMatchID, next, after[next], before[seat], seat, res.Rematch.MatchID)
		}
	}
}
