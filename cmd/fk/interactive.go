package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

const help = `type a move in long algebraic form (h2-h4, e1-f3, O-O, k7-k8=Q),
"moves" to list your legal moves, "pre MOVE [MOVE [MOVE]]" while waiting to queue up to 3
premoves (played the moment your turn comes, if legal then; "pre" alone clears them), "resign" to
resign, "claim" to claim the win when you lead the last other live player by more than 20 (where
the rule set allows it), "quit" to leave (the game goes on). After the game, "rematch" offers a rematch.`

// errLeft is returned when the player leaves with "quit" or Ctrl-C: a
// normal end of the command.
var errLeft = errors.New("left")

// readLines sends the trimmed lines of r until r ends (then it closes the
// channel) or ctx ends.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lines <- strings.TrimSpace(sc.Text()):
			case <-ctx.Done():
				return
			}
		}
	}()
	return lines
}

// screen is what the interactive board shows besides the match: the
// message under the board and the moves since the player's last turn.
type screen struct {
	seat  gamev1.Seat
	fixed bool
	msg   string
	moves moveLog
	// drawn is the version of the match last drawn, so a final state is
	// drawn once.
	drawn uint64
	// queue is the seat's premove queue as the server last showed it.
	queue *matchv1.PremoveQueue
}

// premoveLine describes a premove queue for the board ("" for none).
func premoveLine(q *matchv1.PremoveQueue) string {
	switch {
	case len(q.GetMoves()) > 0:
		return "premoves queued: " + strings.Join(q.GetMoves(), " ")
	case q.GetChange() == matchv1.PremoveChange_PREMOVE_CHANGE_ILLEGAL:
		return "your premove " + q.GetMove() + " was not legal when your turn came: premoves dropped"
	case q.GetChange() == matchv1.PremoveChange_PREMOVE_CHANGE_NO_TIME:
		return "too little time left to play a premove: premoves dropped"
	}
	return ""
}

// moveLog holds the moves since the viewer's seat last moved (that move
// first), so a player sees everything the others did while they waited;
// the server's moves for the seat as a zombie count too. A spectator (or
// a seat that is out) sees the last round.
type moveLog struct {
	moves []*gamev1.MoveEffects
}

// add records e, a move of the match, for the viewer in seat me.
func (l *moveLog) add(e *gamev1.MoveEffects, me gamev1.Seat) {
	mine := func(e *gamev1.MoveEffects) bool { return me != gamev1.Seat_SEAT_UNSPECIFIED && e.GetSeat() == me }
	if mine(e) {
		l.moves = l.moves[:0]
	}
	l.moves = append(l.moves, e)
	// A round is four moves; the bound after an own move only matters if
	// the server skipped the seat's turns.
	limit := 4
	if mine(l.moves[0]) {
		limit = 16
	}
	if n := len(l.moves); n > limit {
		l.moves = slices.Delete(l.moves, 0, n-limit)
	}
}

// draw clears the screen (colour mode) and draws the board with a message.
func (a *app) draw(m *matchv1.Match, sc *screen) {
	if m == nil {
		return
	}
	if !a.Plain {
		fmt.Fprint(a.stdout, "\x1b[H\x1b[2J")
	} else {
		fmt.Fprintln(a.stdout)
	}
	sc.drawn = m.GetVersion()
	render(a.stdout, m, view{Color: !a.Plain, Me: sc.seat, Now: time.Now(), Fixed: sc.fixed, Moves: sc.moves.moves})
	if sc.msg != "" {
		fmt.Fprintln(a.stdout, "\n"+sc.msg)
	}
	// A drop is news only until the player moves; a queue shows while it waits.
	if line := premoveLine(sc.queue); line != "" && !client.Over(m) && (len(sc.queue.GetMoves()) > 0 || m.GetToMove() == sc.seat) {
		fmt.Fprintln(a.stdout, "\n"+line)
	}
	if claimRefusal(m, sc.seat) == "" {
		fmt.Fprintln(a.stdout, "\nyou may claim the win: type \"claim\"")
	}
	if client.SeatLive(m, sc.seat) && m.GetToMove() == sc.seat {
		fmt.Fprint(a.stdout, "\nyour move> ")
	}
}

// interactive plays the match from the keyboard: the board redraws on every
// change (and every second in colour mode, for the clocks), moves are read
// from lines and checked against the legal moves before they are sent.
// "quit" and the end of ctx (Ctrl-C) return errLeft.
func (a *app) interactive(ctx context.Context, c *client.Client, found client.Found, fixed bool, lines <-chan string) (*matchv1.Match, int, error) {
	fctx, cancel := context.WithCancel(ctx)
	// Moves typed here carry no think time: the server compensates their
	// lag by the seat's round trip, measured while the player is seated
	// (docs/match.md "Lag compensation").
	var pinging sync.WaitGroup
	if found.Seat != gamev1.Seat_SEAT_UNSPECIFIED {
		pinging.Go(func() { c.PingLoop(fctx, found.MatchID, nil) })
	}
	defer func() {
		cancel()
		pinging.Wait()
	}()
	updates := make(chan client.Update, 64)
	done := make(chan error, 1)
	var final *matchv1.Match
	go func() {
		m, err := c.Follow(fctx, found.MatchID, client.FollowOptions{RefreshBoard: true, Check: true, Seat: found.Seat}, func(u client.Update) error {
			select {
			case updates <- u:
			case <-fctx.Done():
			}
			return nil
		})
		final = m
		done <- err
	}()

	var cur *matchv1.Match
	reconnects := 0
	sc := &screen{seat: found.Seat, fixed: fixed, msg: help}
	confirm := false // "resign" was typed once
	apply := func(u client.Update) {
		cur, reconnects = u.Match, u.Reconnects
		switch {
		case u.Premoves != nil:
			if u.Premoves.GetSeat() == found.Seat {
				sc.queue = u.Premoves
			}
		case u.Event == nil: // a snapshot shows the caller's queues
			for _, q := range u.Match.GetPremoves() {
				if q.GetSeat() == found.Seat {
					sc.queue = q
				}
			}
		}
		if mv := u.Event.GetMoveApplied(); mv != nil {
			sc.moves.add(mv.GetEffects(), found.Seat)
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case u := <-updates:
			apply(u)
			a.draw(cur, sc)
		case err := <-done:
			// Apply what the follower delivered before it ended.
			for len(updates) > 0 {
				apply(<-updates)
			}
			if final == nil {
				final = cur
			}
			if err != nil {
				if ctx.Err() != nil {
					return final, reconnects, errLeft
				}
				return final, reconnects, err
			}
			if final.GetVersion() != sc.drawn {
				sc.msg = ""
				a.draw(final, sc)
			}
			return final, reconnects, nil
		case <-tick.C:
			if !a.Plain && cur != nil {
				a.draw(cur, sc)
			}
		case line, ok := <-lines:
			if !ok {
				lines = nil // stdin closed: keep watching
				continue
			}
			if line == "quit" || line == "exit" {
				return cur, reconnects, errLeft
			}
			sc.msg, confirm = a.command(ctx, c, found, cur, line, confirm)
			a.draw(cur, sc)
		}
	}
}

// command handles one typed line and returns the message to show and
// whether a resignation waits for its confirmation (confirm: it did).
func (a *app) command(ctx context.Context, c *client.Client, found client.Found, m *matchv1.Match, line string, confirm bool) (string, bool) {
	switch line {
	case "":
		return "", false
	case "help", "?":
		return help, false
	case "claim":
		if why := claimRefusal(m, found.Seat); why != "" {
			return "you cannot claim the win: " + why, false
		}
		if _, err := c.Match.ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: found.MatchID}); err != nil {
			return "claim refused: " + explain(err), false
		}
		return "you claimed the win: the game is over", false
	case "resign", "yes":
		if line == "yes" && !confirm {
			break
		}
		if !confirm {
			return "resign? your army stays on the board as a zombie and your points are frozen.\n" +
				"type \"resign\" again (or \"yes\") to resign, anything else to go on", true
		}
		if _, err := c.Match.Resign(ctx, &matchv1.ResignRequest{MatchId: found.MatchID}); err != nil {
			return "resign failed: " + explain(err), false
		}
		return "you resigned: your army plays on as a zombie", false
	}
	if confirm {
		return "not resigned: the game goes on", false
	}
	if line == "pre" || strings.HasPrefix(line, "pre ") {
		return premove(ctx, c, found, strings.Fields(line)[1:]), false
	}
	if m == nil || !client.SeatLive(m, found.Seat) {
		return "you are not playing any more", false
	}
	if m.GetToMove() != found.Seat {
		msg := "not your turn: " + seatName(m.GetToMove()) + " is to move"
		if rules.CheckMoveText(line) == nil {
			msg += " (\"pre " + line + "\" queues it as a premove)"
		}
		return msg, false
	}
	// The freshest position and legal moves (the board may lag a move).
	resp, err := c.Match.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: found.MatchID})
	if err != nil {
		return "cannot load the match: " + explain(err), false
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
		return fmt.Sprintf("move %s refused: %s (%s)", move, explain(err), client.Reason(err)), false
	}
	return "", false
}

// claimRefusal says why seat may not claim the win in m now, "" when it
// may (docs/rules.md 8.3: the rule set allows claims, exactly two live
// players, seat leads the other by more than a king's worth). A match may
// turn claims on beyond its rule set's default (CreateMatchRequest.claim_win):
// a snapshot's can_claim_win, the server's answer for this caller, proves
// that it did (a later state may be folded onto that snapshot, so the other
// conditions are judged here again). The server judges again; this only
// decides what fk offers.
func claimRefusal(m *matchv1.Match, seat gamev1.Seat) string {
	rs, ok := rules.RuleSetByName(cmpOr(m.GetRuleSet(), "fourkingdoms"))
	switch {
	case m == nil || !client.SeatLive(m, seat):
		return "you are not playing any more"
	case (!ok || !rs.ClaimWin) && !m.GetCanClaimWin():
		return "the rule set " + m.GetRuleSet() + " has no claim win"
	}
	var mine, other int32
	live := 0
	for _, st := range m.GetSeats() {
		if st.GetStatus() != gamev1.SeatStatus_SEAT_STATUS_LIVE {
			continue
		}
		live++
		if st.GetSeat() == seat {
			mine = st.GetPoints()
		} else {
			other = st.GetPoints()
		}
	}
	if live != 2 {
		return fmt.Sprintf("%d players are live, a claim needs exactly 2", live)
	}
	if lead := mine - other; lead <= int32(rs.KingCapturePoints) {
		return fmt.Sprintf("you lead by %d, a claim needs more than %d", lead, rs.KingCapturePoints)
	}
	return ""
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

// premove queues moves as premoves (none: clears the queue) and says what
// the server stored.
func premove(ctx context.Context, c *client.Client, found client.Found, moves []string) string {
	if len(moves) == 0 {
		if _, err := c.Match.ClearPremoves(ctx, &matchv1.ClearPremovesRequest{MatchId: found.MatchID, Seat: found.Seat}); err != nil {
			return "premoves not cleared: " + explain(err)
		}
		return "premoves cleared"
	}
	resp, err := c.Match.SetPremoves(ctx, &matchv1.SetPremovesRequest{MatchId: found.MatchID, Moves: moves, Seat: found.Seat})
	if err != nil {
		return "premoves refused: " + explain(err) + " (" + client.Reason(err) + ")"
	}
	return "premoves queued: " + strings.Join(resp.GetQueue().GetMoves(), " ")
}
