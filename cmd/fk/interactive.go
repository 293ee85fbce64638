package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

const help = `type a move in long algebraic form (h2-h4, e1-f3, O-O, k7-k8=Q),
"moves" to list your legal moves, "resign" to resign, "quit" to leave (the game goes on).`

// draw clears the screen (colour mode) and draws the board with a message.
func (a *app) draw(m *matchv1.Match, me gamev1.Seat, msg string) {
	if m == nil {
		return
	}
	if !a.Plain {
		fmt.Fprint(a.stdout, "\x1b[H\x1b[2J")
	} else {
		fmt.Fprintln(a.stdout)
	}
	render(a.stdout, m, view{Color: !a.Plain, Me: me, Now: time.Now()})
	if msg != "" {
		fmt.Fprintln(a.stdout, "\n"+msg)
	}
	if client.SeatLive(m, me) && m.GetToMove() == me {
		fmt.Fprint(a.stdout, "\nyour move> ")
	}
}

// interactive plays the match from the keyboard: the board redraws on every
// change (and every second in colour mode, for the clocks), moves are read
// from stdin and checked against the legal moves before they are sent.
func (a *app) interactive(ctx context.Context, c *client.Client, found client.Found) (*matchv1.Match, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan client.Update, 64)
	done := make(chan error, 1)
	var final *matchv1.Match
	go func() {
		m, err := c.Follow(ctx, found.MatchID, client.FollowOptions{RefreshBoard: true}, func(u client.Update) error {
			select {
			case updates <- u:
			case <-ctx.Done():
			}
			return nil
		})
		final = m
		done <- err
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(a.stdin)
		for sc.Scan() {
			select {
			case lines <- strings.TrimSpace(sc.Text()):
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()

	var cur *matchv1.Match
	reconnects := 0
	msg := help
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case u := <-updates:
			cur, reconnects = u.Match, u.Reconnects
			a.draw(cur, found.Seat, msg)
		case err := <-done:
			// Drain what the follower delivered before it ended.
			for len(updates) > 0 {
				u := <-updates
				cur = u.Match
			}
			if final == nil {
				final = cur
			}
			if err != nil {
				return final, reconnects, err
			}
			a.draw(final, found.Seat, "")
			return final, reconnects, nil
		case <-tick.C:
			if !a.Plain && cur != nil {
				a.draw(cur, found.Seat, msg)
			}
		case line, ok := <-lines:
			if !ok {
				lines = nil // stdin closed: keep watching
				continue
			}
			var quit bool
			msg, quit = a.command(ctx, c, found, cur, line)
			if quit {
				return cur, reconnects, errors.New("left the game (it goes on without you: the clock runs)")
			}
			a.draw(cur, found.Seat, msg)
		}
	}
}

// command handles one typed line and returns the message to show.
func (a *app) command(ctx context.Context, c *client.Client, found client.Found, m *matchv1.Match, line string) (string, bool) {
	switch line {
	case "":
		return "", false
	case "help", "?":
		return help, false
	case "quit", "exit":
		return "", true
	case "resign":
		if _, err := c.Match.Resign(ctx, &matchv1.ResignRequest{MatchId: found.MatchID}); err != nil {
			return "resign failed: " + status.Convert(err).Message(), false
		}
		return "you resigned: your army plays on as a zombie", false
	}
	if m == nil || !client.SeatLive(m, found.Seat) {
		return "you are not playing any more", false
	}
	if m.GetToMove() != found.Seat {
		return "not your turn: " + seatName(m.GetToMove()) + " is to move", false
	}
	// The freshest position and legal moves (the board may lag a move).
	resp, err := c.Match.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: found.MatchID})
	if err != nil {
		return "cannot load the match: " + status.Convert(err).Message(), false
	}
	fresh := resp.GetMatch()
	legal := fresh.GetLegalMoves()
	if line == "moves" {
		return "legal moves: " + strings.Join(legal, " "), false
	}
	move, why := checkMove(fresh, line)
	if why != "" {
		return why, false
	}
	ply := fresh.GetPly()
	_, err = c.Match.MakeMove(ctx, &matchv1.MakeMoveRequest{
		MatchId: found.MatchID, Move: move, ExpectedPly: &ply, ClientMoveId: "ply-" + strconv.FormatUint(uint64(ply), 10),
	})
	if err != nil {
		return fmt.Sprintf("move %s refused: %s (%s)", move, status.Convert(err).Message(), client.Reason(err)), false
	}
	return "", false
}

// checkMove reads text as a move in m (the caller's turn) and returns the
// server's spelling of it, or an explanation with the legal alternatives
// for the piece on the square typed.
func checkMove(m *matchv1.Match, text string) (string, string) {
	legal := m.GetLegalMoves()
	rs, ok := rules.RuleSetByName(cmpOr(m.GetRuleSet(), "fourkingdoms"))
	if !ok {
		return text, "" // unknown rule set: let the server judge
	}
	g, err := rules.NewGame(rs, 0, m.GetFen4())
	if err != nil {
		return text, ""
	}
	mv, err := g.ParseMove(text)
	if err == nil {
		s := g.MoveText(mv)
		if slices.Contains(legal, s) || len(legal) == 0 {
			return s, ""
		}
	}
	if errors.Is(err, rules.ErrBadMoveText) {
		return "", fmt.Sprintf("cannot read %q: type a move like h2-h4, e1-f3, O-O or k7-k8=Q (\"moves\" lists them)", text)
	}
	// Illegal: list what the piece on the from-square can do.
	from := squarePrefix(text)
	var alts []string
	for _, l := range legal {
		t := strings.TrimLeft(l, "KQRBNP")
		if from != "" && (strings.HasPrefix(t, from+"-") || strings.HasPrefix(t, from+"x")) {
			alts = append(alts, l)
		}
	}
	switch {
	case from == "":
		return "", fmt.Sprintf("%s is not a legal move", text)
	case len(alts) == 0:
		return "", fmt.Sprintf("%s is not a legal move, and nothing of yours on %s can move (\"moves\" lists your moves)", text, from)
	}
	return "", fmt.Sprintf("%s is not a legal move; the piece on %s can play: %s", text, from, strings.Join(alts, " "))
}

// squarePrefix returns the first square name in a move text ("h2" of
// "h2-h5", "g1" of "Qg1xh14").
func squarePrefix(text string) string {
	t := strings.TrimLeft(text, "KQRBNP")
	if len(t) < 2 || t[0] < 'a' || t[0] > 'n' {
		return ""
	}
	n := 1
	for n < len(t) && n < 3 && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n == 1 {
		return ""
	}
	return t[:n]
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
