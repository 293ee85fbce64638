package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// startMatch is the start position with Red to move, as GetMatch returns
// it to Red: fen4, pieces and Red's legal moves.
func startMatch(t *testing.T) *matchv1.Match {
	t.Helper()
	g, err := rules.NewGame(rules.FourKingdoms(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	m := &matchv1.Match{MatchId: "m1", Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, RuleSet: "fourkingdoms", Fen4: g.FEN4(), ToMove: gamev1.Seat_SEAT_RED}
	for _, mv := range g.LegalMoves(rules.Red) {
		m.LegalMoves = append(m.LegalMoves, g.MoveText(mv))
	}
	for _, sq := range g.Squares() {
		m.Pieces = append(m.Pieces, &matchv1.PlacedPiece{Square: sq.Name, Seat: gamev1.Seat(sq.Seat + 1), Kind: gamev1.PieceKind(sq.Kind)})
	}
	for s := gamev1.Seat_SEAT_RED; s <= gamev1.Seat_SEAT_GREEN; s++ {
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: s, Status: gamev1.SeatStatus_SEAT_STATUS_LIVE, Player: &gamev1.Player{DisplayName: "P" + s.String()}})
	}
	return m
}

func TestCheckMove(t *testing.T) {
	t.Parallel()
	m := startMatch(t)
	tests := []struct {
		text     string
		wantMove string
		wantWhy  []string // fragments of the explanation
	}{
		{text: "h2-h4", wantMove: "h2-h4"},
		{text: "h2h3", wantMove: "h2-h3"},
		{text: "Nj1-i3", wantMove: "Nj1-i3"},
		{text: "h2-h5", wantWhy: []string{"not a legal move", "h2 can play", "h2-h3", "h2-h4"}},
		{text: "h1-h2", wantWhy: []string{"nothing of yours on h1 can move"}},
		{text: "hello", wantWhy: []string{"cannot read"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			move, why := checkMove(m, tt.text)
			if tt.wantMove != "" {
				if why != "" || !strings.HasSuffix(move, strings.TrimLeft(tt.wantMove, "KQRBNP")) || !slices.Contains(m.LegalMoves, move) {
					t.Fatalf("checkMove(%q) = %q, %q; want the legal move %q", tt.text, move, why, tt.wantMove)
				}
				return
			}
			if move != "" {
				t.Fatalf("checkMove(%q) accepted %q", tt.text, move)
			}
			for _, f := range tt.wantWhy {
				if !strings.Contains(why, f) {
					t.Errorf("checkMove(%q) says %q, want it to mention %q", tt.text, why, f)
				}
			}
		})
	}
}

func TestSquarePrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"h2-h4": "h2", "Qg1xh14": "g1", "n11-m11": "n11", "O-O": "", "x": "", "a": ""} {
		if got := squarePrefix(in); got != want {
			t.Errorf("squarePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderPlainBoard(t *testing.T) {
	t.Parallel()
	m := startMatch(t)
	m.LastMove = &gamev1.MoveEffects{Move: "h2-h4", Seat: gamev1.Seat_SEAT_RED, From: &gamev1.Square{Name: "h2"}, To: &gamev1.Square{Name: "h4"}}
	m.Seats[1].Status = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
	m.Seats[1].ExitReason = gamev1.ExitReason_EXIT_REASON_RESIGNED
	m.Pieces[0].Zombie = true
	var b bytes.Buffer
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED})
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Fatal("plain mode wrote ANSI escapes")
	}
	// Rank 1: three unplayable corner cells, then Red's back rank; the
	// rook on d1 was marked a zombie piece (lower-case letter).
	if want := "  1          rr rN rB rQ rK rB rN rR           1"; !slices.Contains(strings.Split(out, "\n"), want) {
		t.Errorf("no rank 1 line %q in\n%s", want, out)
	}
	for _, want := range []string{"a  b  c", "yK", "gQ", "bK", "> Red", "(you)", "zombie, resigned", "last move:\n  Red    h2-h4", ".* ",
		"match m1", "you play Red, at the bottom", "legend:", "lower case = zombie", "# = dead", "* after a piece = last move"} {
		if !strings.Contains(out, want) {
			t.Errorf("board lacks %q:\n%s", want, out)
		}
	}
}

func TestCommandsNeedASession(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := func(k string) string {
		if k == "FK_HOME" {
			return t.TempDir()
		}
		return ""
	}
	err := run(context.Background(), []string{"rating"}, env, strings.NewReader(""), &out)
	if err == nil || !strings.Contains(err.Error(), "fk login") {
		t.Fatalf("rating without a session: %v, want a hint to log in", err)
	}
}

func TestParseAcceptsFlagsAnywhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args      []string
		wantPlain bool
		wantOps   []string
	}{
		{[]string{"m1"}, false, []string{"m1"}},
		{[]string{"--plain", "m1"}, true, []string{"m1"}},
		{[]string{"m1", "--plain"}, true, []string{"m1"}},
		{[]string{"m1", "--plain", "m2"}, true, []string{"m1", "m2"}},
		{[]string{"--", "--plain"}, false, []string{"--plain"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			a := &app{stdout: &bytes.Buffer{}}
			ops, err := parse(a.flags("watch"), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if a.Plain != tt.wantPlain || !slices.Equal(ops, tt.wantOps) {
				t.Errorf("parse(%q): plain %v, operands %q; want %v, %q", tt.args, a.Plain, ops, tt.wantPlain, tt.wantOps)
			}
		})
	}
}

// TestGlobalFlagsAfterTheCommand runs whole commands: a global flag after
// the command is the global setting (here --home, which decides the
// session file the command reads).
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := saveSession(home, session{PlayerID: "p1", Token: "t"}); err != nil {
		t.Fatal(err)
	}
	env := func(string) string { return "" }
	for _, args := range [][]string{
		{"--home", home, "rating", "--matchmaking", "127.0.0.1:1", "--rating", "127.0.0.1:1"},
		{"rating", "--plain", "--home", home, "--rating", "127.0.0.1:1"},
	} {
		err := run(t.Context(), args, env, strings.NewReader(""), &bytes.Buffer{})
		// Signed in (the session was found), so the call went out and
		// found nothing listening: the friendly error names the service.
		if err == nil || strings.Contains(err.Error(), "fk login") || !strings.Contains(explain(err), "cannot reach rating at 127.0.0.1:1") {
			t.Errorf("fk %q: %v (explained: %v)", args, err, explain(err))
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	unreachable := &client.UnreachableError{Service: "matchmaking", Addr: "localhost:8082",
		Err: status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:8082: connect: connection refused\"")}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unreachable", fmt.Errorf("guest login: %w", unreachable), "cannot reach matchmaking at localhost:8082 — is `make run` running?"},
		{"status prefix", fmt.Errorf("export m1: %w", status.Error(codes.NotFound, "match not found")), "export m1: match not found"},
		{"doubled", fmt.Errorf("rating of p: %w", status.Error(codes.Unauthenticated, "malformed token: malformed token: no kid header")),
			"rating of p: malformed token: no kid header — run `fk login` to sign in again"},
		{"plain", errors.New("not signed in: run `fk login` first"), "not signed in: run `fk login` first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := explain(tt.err)
			if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "rpc error") {
				t.Errorf("explain = %q, want it to start with %q", got, tt.want)
			}
		})
	}
}

// TestRenderTurnsTheBoardToTheViewer: Blue sits east in fourkingdoms, so
// Blue's view has file n at the bottom with Blue's back rank, Red on the
// left; --fixed keeps Red at the bottom.
func TestRenderTurnsTheBoardToTheViewer(t *testing.T) {
	t.Parallel()
	m := startMatch(t)
	tests := []struct {
		name  string
		v     view
		lines []string
		texts []string
	}{
		{"blue", view{Me: gamev1.Seat_SEAT_BLUE},
			[]string{"  n          bR bN bB bQ bK bB bN bR           n", "     1  2  3  4  5  6  7  8  9 10 11 12 13 14 "},
			[]string{"you play Blue, at the bottom", "Red    left", "Blue   bottom", "Yellow right", "Green  top"}},
		{"yellow", view{Me: gamev1.Seat_SEAT_YELLOW},
			[]string{" 14          yR yN yB yQ yK yB yN yR           14", "     n  m  l  k  j  i  h  g  f  e  d  c  b  a "},
			nil},
		{"fixed", view{Me: gamev1.Seat_SEAT_BLUE, Fixed: true},
			[]string{"  1          rR rN rB rQ rK rB rN rR           1"},
			[]string{"you play Blue, at the right", "Red    bottom"}},
		{"spectator", view{},
			[]string{"  1          rR rN rB rQ rK rB rN rR           1"},
			[]string{"Blue   right"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			render(&b, m, tt.v)
			out := b.String()
			lines := strings.Split(out, "\n")
			for _, want := range tt.lines {
				if !slices.Contains(lines, want) {
					t.Errorf("no line %q in\n%s", want, out)
				}
			}
			for _, want := range tt.texts {
				if !strings.Contains(out, want) {
					t.Errorf("board lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestMoveLogKeepsTheMovesSinceYourLastTurn(t *testing.T) {
	t.Parallel()
	red, blue, yellow, green := gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN
	mv := func(s gamev1.Seat, text string) *gamev1.MoveEffects { return &gamev1.MoveEffects{Seat: s, Move: text} }
	var l moveLog
	for _, e := range []*gamev1.MoveEffects{mv(red, "h2-h3"), mv(blue, "b7-c7"), mv(yellow, "g13-g12"), mv(green, "m8-l8"), mv(red, "h3-h4"), mv(blue, "b8-c8")} {
		l.add(e, red)
	}
	var got []string
	for _, e := range l.moves {
		got = append(got, e.GetMove())
	}
	if want := []string{"h3-h4", "b8-c8"}; !slices.Equal(got, want) {
		t.Errorf("moves since Red's last turn = %q, want %q", got, want)
	}
	// After resigning, the server moves the seat as a zombie: those moves
	// start the log too.
	for i := range 10 {
		l.add(&gamev1.MoveEffects{Seat: gamev1.Seat(i%4 + 1), Move: fmt.Sprint("z", i), IsZombieMove: i%4 == 0}, red)
	}
	if len(l.moves) != 2 || l.moves[0].GetMove() != "z8" || l.moves[1].GetMove() != "z9" {
		t.Errorf("log of a zombie seat = %v, want z8 z9", l.moves)
	}
	// A spectator keeps the last round.
	var s moveLog
	for i := range 6 {
		s.add(mv(gamev1.Seat(i%4+1), fmt.Sprint(i)), gamev1.Seat_SEAT_UNSPECIFIED)
	}
	if len(s.moves) != 4 || s.moves[0].GetMove() != "2" {
		t.Errorf("spectator log = %v, want the last four moves", s.moves)
	}
}

func TestRenderShowsMovesCapturesAndPoints(t *testing.T) {
	t.Parallel()
	m := startMatch(t)
	v := view{Me: gamev1.Seat_SEAT_RED, Moves: []*gamev1.MoveEffects{
		{Seat: gamev1.Seat_SEAT_RED, Move: "h2-h4"},
		{Seat: gamev1.Seat_SEAT_BLUE, Move: "Qn7xh7", Captured: &gamev1.Capture{Kind: gamev1.PieceKind_PIECE_KIND_KNIGHT, Owner: gamev1.Seat_SEAT_RED}, PointsGained: 3},
		{Seat: gamev1.Seat_SEAT_YELLOW, Move: "g13-g12", IsZombieMove: true},
		{Seat: gamev1.Seat_SEAT_GREEN, Move: "Qa7xh7", Captured: &gamev1.Capture{Kind: gamev1.PieceKind_PIECE_KIND_QUEEN, Owner: gamev1.Seat_SEAT_BLUE}, MatedSeats: []gamev1.Seat{gamev1.Seat_SEAT_RED}, PointsGained: 29},
	}}
	var b bytes.Buffer
	render(&b, m, v)
	out := b.String()
	for _, want := range []string{"moves since your last turn:", "Red    h2-h4", "Blue   Qn7xh7     takes Red's knight, +3",
		"Yellow g13-g12    zombie move", "Green  Qa7xh7     takes Blue's queen, mates Red, +29"} {
		if !strings.Contains(out, want) {
			t.Errorf("board lacks %q:\n%s", want, out)
		}
	}
}

func TestClockLabelsTheFirstMoveLimit(t *testing.T) {
	t.Parallel()
	now := time.Now()
	m := startMatch(t)
	m.Clocks = []*gamev1.Clock{
		{Seat: gamev1.Seat_SEAT_RED, Remaining: durationpb.New(5 * time.Minute), Running: true, TurnDeadline: timestamppb.New(now.Add(29500 * time.Millisecond))},
		{Seat: gamev1.Seat_SEAT_BLUE, Remaining: durationpb.New(5 * time.Minute)},
	}
	var b bytes.Buffer
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED, Now: now})
	out := b.String()
	if !strings.Contains(out, "*0:29 to make a first move") || !strings.Contains(out, " 5:00") {
		t.Errorf("first move clocks:\n%s", out)
	}
	// Later in the game the running clock is just the clock.
	m.Ply = 9
	m.Clocks[0].TurnDeadline = timestamppb.New(now.Add(20 * time.Second))
	b.Reset()
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED, Now: now})
	if out := b.String(); strings.Contains(out, "first move") || !strings.Contains(out, "*0:20") {
		t.Errorf("clock at ply 9:\n%s", out)
	}
}

// TestDisconnectCountdown: a seat shown disconnected counts down to the
// end of its grace.
func TestDisconnectCountdown(t *testing.T) {
	t.Parallel()
	now := time.Now()
	m := startMatch(t)
	m.Seats[1].DisconnectGraceEndsAt = timestamppb.New(now.Add(42500 * time.Millisecond))
	var b bytes.Buffer
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED, Now: now})
	if out := b.String(); strings.Count(out, "disconnected 0:42") != 1 {
		t.Errorf("Blue's countdown missing:\n%s", out)
	}
	// The fold follows the events.
	client.Fold(m, &eventsv1.MatchEvent{Version: m.GetVersion() + 1, Event: &eventsv1.MatchEvent_PlayerReconnected{
		PlayerReconnected: &eventsv1.PlayerReconnected{Seat: gamev1.Seat_SEAT_BLUE}}})
	b.Reset()
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED, Now: now})
	if out := b.String(); strings.Contains(out, "disconnected") {
		t.Errorf("countdown after the reconnection:\n%s", out)
	}
	client.Fold(m, &eventsv1.MatchEvent{Version: m.GetVersion() + 1, Event: &eventsv1.MatchEvent_PlayerDisconnected{
		PlayerDisconnected: &eventsv1.PlayerDisconnected{Seat: gamev1.Seat_SEAT_GREEN, GraceEndsAt: timestamppb.New(now.Add(time.Minute))}}})
	b.Reset()
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED, Now: now})
	if out := b.String(); !strings.Contains(out, "disconnected 1:00") {
		t.Errorf("Green's countdown missing after PlayerDisconnected:\n%s", out)
	}
}

func TestColourLegend(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	render(&b, startMatch(t), view{Color: true, Me: gamev1.Seat_SEAT_RED})
	for _, want := range []string{"legend:", "zombie", "dead", "last move", "match m1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("colour board lacks %q", want)
		}
	}
}

// TestRatingLine: fk rating names the player and says how many games a
// provisional rating still needs (issue 24).
func TestRatingLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    *ratingv1.Rating
		want string
	}{
		{name: "established", r: &ratingv1.Rating{PlayerId: "guest-1a2b", DisplayName: "Alice", RuleSet: "fourkingdoms", DisplayRating: 1712, GamesPlayed: 80, Mu: 31.2, Sigma: 3.1},
			want: "Alice in fourkingdoms: 1712, 80 games (mu 31.2, sigma 3.1)"},
		{name: "provisional", r: &ratingv1.Rating{PlayerId: "guest-1a2b", DisplayName: "Alice", RuleSet: "fourkingdoms", DisplayRating: 1390, GamesPlayed: 3, Mu: 26, Sigma: 7.5, Provisional: true, GamesToEstablish: 54},
			want: "Alice in fourkingdoms: 1390 (provisional: about 54 more games), 3 games (mu 26.0, sigma 7.5)"},
		{name: "provisional, old server", r: &ratingv1.Rating{PlayerId: "guest-1a2b", DisplayName: "Alice", RuleSet: "fourkingdoms", DisplayRating: 1390, GamesPlayed: 3, Mu: 26, Sigma: 7.5, Provisional: true},
			want: "Alice in fourkingdoms: 1390 (provisional), 3 games (mu 26.0, sigma 7.5)"},
		{name: "no name", r: &ratingv1.Rating{PlayerId: "guest-1a2b", RuleSet: "fourkingdoms", DisplayRating: 1500, Mu: 25, Sigma: 8.3, Provisional: true, IsDefault: true, GamesToEstablish: 57},
			want: "guest-1a2b in fourkingdoms: 1500 (no rated game yet), 0 games (mu 25.0, sigma 8.3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ratingLine(tt.r); got != tt.want {
				t.Errorf("ratingLine = %q\nwant           %q", got, tt.want)
			}
		})
	}
}

// TestWriteLeaderboard: fk leaderboard says how many provisional players
// it leaves out, and with --provisional lists them in their own section
// with the games they still need (issue 24 item 17).
func TestWriteLeaderboard(t *testing.T) {
	t.Parallel()
	entry := func(rank uint32, name string, rating int32, games, toGo uint32) *ratingv1.LeaderboardEntry {
		return &ratingv1.LeaderboardEntry{Rank: rank, Player: &gamev1.Player{PlayerId: "id-" + name, DisplayName: name},
			DisplayRating: rating, GamesPlayed: games, Provisional: toGo > 0, GamesToEstablish: toGo}
	}
	ranked := &ratingv1.GetLeaderboardResponse{SectionSize: 3, Entries: []*ratingv1.LeaderboardEntry{
		entry(1, "Alice", 1712, 80, 0), entry(2, "Bob", 1650, 41, 0)}}
	prov := &ratingv1.GetLeaderboardResponse{SectionSize: 2, Entries: []*ratingv1.LeaderboardEntry{
		entry(1, "Carol", 1540, 3, 54), entry(2, "", 1499, 1, 56)}}
	none := &ratingv1.GetLeaderboardResponse{}
	tests := []struct {
		name            string
		ranked, prov    *ratingv1.GetLeaderboardResponse
		showProvisional bool
		want            string
	}{
		{"ranked only, provisional players counted", ranked, &ratingv1.GetLeaderboardResponse{SectionSize: 2, Entries: prov.Entries[:1]}, false,
			"  1. Alice                     1712  80 games\n" +
				"  2. Bob                       1650  41 games\n" +
				"     ... and 1 more (--size shows up to 100)\n" +
				"2 provisional players not shown: fk leaderboard --provisional lists them\n"},
		{"both sections", ranked, prov, true,
			"  1. Alice                     1712  80 games\n" +
				"  2. Bob                       1650  41 games\n" +
				"     ... and 1 more (--size shows up to 100)\n" +
				"\nprovisional (2 players, ranked once established):\n" +
				"  1. Carol                     1540  3 games, about 54 more\n" +
				"  2. id-                       1499  1 games, about 56 more\n"},
		{"a new pool: nobody ranked", none, &ratingv1.GetLeaderboardResponse{SectionSize: 1, Entries: prov.Entries[:1]}, false,
			"nobody is ranked yet: a rating is provisional until it is established (fk rating shows how many games a player still needs)\n" +
				"1 provisional player not shown: fk leaderboard --provisional lists them\n"},
		{"a new pool with --provisional", none, &ratingv1.GetLeaderboardResponse{SectionSize: 1, Entries: prov.Entries[:1]}, true,
			"nobody is ranked yet: a rating is provisional until it is established (fk rating shows how many games a player still needs)\n" +
				"\nprovisional (1 player, ranked once established):\n" +
				"  1. Carol                     1540  3 games, about 54 more\n"},
		{"nobody at all", none, none, true,
			"nobody is ranked yet: a rating is provisional until it is established (fk rating shows how many games a player still needs)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			writeLeaderboard(&b, tt.ranked, tt.prov, tt.showProvisional)
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}
