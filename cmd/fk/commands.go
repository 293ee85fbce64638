package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

func (a *app) login(ctx context.Context, args []string) error {
	fs := a.flags("login")
	name := fs.String("name", "", "display name (empty: the server picks one)")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("fk login: unexpected argument %q", operands[0])
	}
	c, err := client.Dial(a.Endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Login(ctx, *name)
	if err != nil {
		return err
	}
	s := session{
		PlayerID: resp.GetPlayerId(), DisplayName: resp.GetDisplayName(),
		Token: resp.GetToken(), ExpiresAt: resp.GetExpiresAt().AsTime(),
		RefreshToken: resp.GetRefreshToken(), RefreshExpiresAt: resp.GetRefreshExpiresAt().AsTime(),
	}
	if err := saveSession(a.Home, s); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "signed in as %s (%s); session kept in %s\n", s.DisplayName, s.PlayerID, sessionPath(a.Home))
	return nil
}

// rename changes the guest's display name (AuthService.SetDisplayName),
// which also rotates the session's tokens; the new ones are saved.
func (a *app) rename(ctx context.Context, args []string) error {
	fs := a.flags("rename")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return errors.New("fk rename: give the new name as one argument (quote it if it has spaces)")
	}
	s, err := loadSession(a.Home)
	if err != nil {
		return err
	}
	if !s.refreshable(time.Now()) {
		return errors.New("this session has no refresh token (signed in by an older fk): run `fk login --name NAME` instead")
	}
	c, err := client.Dial(a.Endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Auth.SetDisplayName(ctx, &authv1.SetDisplayNameRequest{RefreshToken: s.RefreshToken, DisplayName: operands[0]})
	if err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	s = session{
		PlayerID: resp.GetPlayerId(), DisplayName: resp.GetDisplayName(),
		Token: resp.GetToken(), ExpiresAt: resp.GetExpiresAt().AsTime(),
		RefreshToken: resp.GetRefreshToken(), RefreshExpiresAt: resp.GetRefreshExpiresAt().AsTime(),
	}
	if err := saveSession(a.Home, s); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "you are %s (%s) from your next match on\n", s.DisplayName, s.PlayerID)
	return nil
}

// logout ends the session on the server (its refresh token stops
// working) and deletes the session file.
func (a *app) logout(ctx context.Context, args []string) error {
	fs := a.flags("logout")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("fk logout: unexpected argument %q", operands[0])
	}
	s, err := loadSession(a.Home)
	if err != nil {
		return err
	}
	if s.RefreshToken != "" {
		c, err := client.Dial(a.Endpoints)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Auth.RevokeSession(ctx, &authv1.RevokeSessionRequest{RefreshToken: s.RefreshToken}); err != nil {
			return fmt.Errorf("sign out: %w", err)
		}
	}
	if err := os.Remove(sessionPath(a.Home)); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "signed out %s (%s)\n", s.DisplayName, s.PlayerID)
	return nil
}

// link links the signed-in guest to an account at the deployment's
// OpenID Connect provider (AuthService.LinkGuest), so that its ratings
// carry over: the provider's access token (--token, --token-file or
// FK_OIDC_TOKEN) authorizes the call, the session's refresh token proves
// the guest. The guest session ends; the session file then holds the
// account's token, so the next commands play as the account.
func (a *app) link(ctx context.Context, args []string) error {
	fs := a.flags("link")
	token := fs.String("token", a.getenv("FK_OIDC_TOKEN"), "the provider's access token of your account (also FK_OIDC_TOKEN)")
	file := fs.String("token-file", "", "read the access token from this file instead")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("fk link: unexpected argument %q", operands[0])
	}
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return fmt.Errorf("fk link: %w", err)
		}
		*token = string(b)
	}
	if *token = strings.TrimSpace(*token); *token == "" {
		return errors.New("fk link: give your account's access token with --token, --token-file or FK_OIDC_TOKEN")
	}
	s, err := loadSession(a.Home)
	if err != nil {
		return err
	}
	if s.RefreshToken == "" {
		return errors.New("fk link: this session is not a guest's with a refresh token: nothing to link (run `fk login` for a guest)")
	}
	c, err := client.Dial(a.Endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetToken(*token)
	resp, err := c.Auth.LinkGuest(ctx, &authv1.LinkGuestRequest{RefreshToken: s.RefreshToken})
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	// The account's token from now on; the provider renews it, not fk.
	acct := session{PlayerID: resp.GetPlayerId(), DisplayName: s.DisplayName, Token: *token}
	if err := saveSession(a.Home, acct); err != nil {
		return fmt.Errorf("linked, but the session file was not saved: %w", err)
	}
	fmt.Fprintf(a.stdout, "linked guest %s (%s) to account %s: its ratings move to the account within seconds; you now play as the account\n",
		s.DisplayName, resp.GetGuestPlayerId(), resp.GetPlayerId())
	return nil
}

// result is the final line of `fk play --json`.
type result struct {
	MatchID     string            `json:"match_id"`
	PlayerID    string            `json:"player_id"`
	Seat        string            `json:"seat"`
	Status      string            `json:"status"`
	Termination string            `json:"termination,omitempty"`
	Rank        int               `json:"rank,omitempty"`
	Ranking     []string          `json:"ranking,omitempty"`
	Points      map[string]int32  `json:"points,omitempty"`
	Players     map[string]string `json:"players"`
	Plies       uint32            `json:"plies"`
	Reconnects  int               `json:"reconnects"`
}

func (a *app) play(ctx context.Context, args []string) error {
	fs := a.flags("play")
	queue := fs.String("queue", "fourkingdoms/5+5", "queue to join (see ListQueues)")
	auto := fs.String("auto", "", "let a bot brain play: random or greedy (non-interactive)")
	asJSON := fs.Bool("json", false, "print only a final JSON result line")
	fixed := fs.Bool("fixed", false, "draw the board with Red at the bottom instead of turning it to your seat")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("fk play: unexpected argument %q", operands[0])
	}
	var level brain.Level
	if *auto != "" {
		if level, err = brain.ParseLevel(*auto); err != nil {
			return err
		}
	}
	c, s, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	// One reader of stdin for the queue ("quit" leaves it) and the game.
	var lines <-chan string
	if *auto == "" {
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		lines = readLines(lctx, a.stdin)
	}
	for {
		found, err := a.findMatch(ctx, c, *queue, !*asJSON, lines)
		if errors.Is(err, errLeft) || (err != nil && ctx.Err() != nil) {
			if !*asJSON {
				fmt.Fprintf(a.stdout, "\nleft the queue %s\n", *queue)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(a.stdout, "\rmatched: match %s, you play %s%40s\n", found.MatchID, seatName(found.Seat), "")
		}
		err = a.playFound(ctx, c, s, found, playMode{auto: *auto, level: level, asJSON: *asJSON, fixed: *fixed, queue: *queue}, lines)
		if !errors.Is(err, errRequeued) {
			return err
		}
		// Back in the queue with the original ticket: wait on.
	}
}

// errRequeued ends a queue match aborted because another seat missed its
// first move: the player is back in the queue (docs/match.md "First-move
// abort").
var errRequeued = errors.New("back in the queue")

// afterAbort handles a queue match (mode.queue set) that ended aborted:
// when another seat missed its first move the player is back in the
// queue (errRequeued, after saying so); when the player's own seat did,
// it says so. Any other end returns nil.
func (a *app) afterAbort(ctx context.Context, c *client.Client, found client.Found, final *matchv1.Match, mode playMode) error {
	if mode.queue == "" || final.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ABORTED {
		return nil
	}
	missed, err := c.FirstMoveMissed(ctx, final)
	if err != nil || missed == gamev1.Seat_SEAT_UNSPECIFIED {
		return nil // an operator's abort, or unknown: the match just ended
	}
	if missed == found.Seat {
		if !mode.asJSON {
			fmt.Fprintln(a.stdout, "you did not make your first move in time: the game was aborted")
		}
		return nil
	}
	tk, err := c.Requeue(ctx, mode.queue)
	if err != nil {
		return err
	}
	if !mode.asJSON {
		fmt.Fprintf(a.stdout, "%s missed their first move: the game was aborted; back in the queue (waiting since %s)\n",
			seatName(missed), tk.GetCreatedAt().AsTime().Local().Format(time.TimeOnly))
	}
	return errRequeued
}

// playMode is how a found match is played: by a bot brain (auto, level) or
// on the interactive board (fixed: Red at the bottom), with only a JSON
// result line (asJSON).
type playMode struct {
	auto   string
	level  brain.Level
	asJSON bool
	fixed  bool
	// queue is the queue the match was found in ("" for a table's): a
	// first-move abort by another seat puts the player back in it.
	queue string
}

// playFound plays a match found in a queue or started at a table to its
// end, and prints the result; then, after an interactive match that
// finished, the rematch prompt, and each rematch the same way.
func (a *app) playFound(ctx context.Context, c *client.Client, s session, found client.Found, mode playMode, lines <-chan string) error {
	for {
		again, err := a.playOne(ctx, c, s, found, mode, lines)
		if err != nil || again == (client.Found{}) {
			return err
		}
		found = again
		fmt.Fprintf(a.stdout, "\rrematch: match %s, you play %s%40s\n", found.MatchID, seatName(found.Seat), "")
	}
}

// playOne plays one match and returns the rematch to play next (zero when
// there is none).
func (a *app) playOne(ctx context.Context, c *client.Client, s session, found client.Found, mode playMode, lines <-chan string) (client.Found, error) {
	auto, asJSON, fixed, level := &mode.auto, &mode.asJSON, &mode.fixed, mode.level
	var err error
	var final *matchv1.Match
	reconnects := 0
	if *auto != "" {
		br := brain.New(level, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
		choose := func(_ context.Context, m *matchv1.Match) (string, error) {
			return br.Choose(brain.Turn{RuleSet: m.GetRuleSet(), FEN4: m.GetFen4(), Seat: rules.Seat(found.Seat - 1), Legal: m.GetLegalMoves(), Game: m.GetMatchId()})
		}
		observe := func(u client.Update) {
			reconnects = u.Reconnects
			if !*asJSON {
				if u.Event.GetMoveApplied() != nil {
					fmt.Fprintf(a.stdout, "%4d %s\n", u.Match.GetPly(), moveText(u.Event.GetMoveApplied().GetEffects()))
				}
			}
		}
		final, err = c.PlayAuto(ctx, found.MatchID, found.Seat, choose, observe)
		if err != nil && ctx.Err() != nil {
			err = errLeft
		}
	} else {
		final, reconnects, err = a.interactive(ctx, c, found, *fixed, lines)
	}
	if errors.Is(err, errLeft) {
		if !*asJSON {
			fmt.Fprintf(a.stdout, "\nleft match %s: it goes on without you (your clock runs).\n"+
				"follow it with `fk watch %s`\n", found.MatchID, found.MatchID)
		}
		return client.Found{}, nil
	}
	if err != nil {
		return client.Found{}, err
	}
	if err := a.afterAbort(ctx, c, found, final, mode); err != nil {
		return client.Found{}, err // its line says the game was aborted
	}
	res := summarize(final, s.PlayerID, found, reconnects)
	if *asJSON {
		return client.Found{}, json.NewEncoder(a.stdout).Encode(res)
	}
	if *auto != "" {
		fmt.Fprintln(a.stdout, resultText(final)) // the interactive board shows it already
	}
	if res.Rank > 0 {
		fmt.Fprintf(a.stdout, "you finished %d. — see your rating with `fk rating`\n", res.Rank)
	}
	fmt.Fprintln(a.stdout, replayHint(found.MatchID))
	if *auto != "" || final.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED {
		return client.Found{}, nil
	}
	again, _ := a.rematch(ctx, c, s.PlayerID, found, lines)
	return again, nil
}

// replayHint says how to see a match again.
func replayHint(id string) string {
	return fmt.Sprintf("match %s: replay it with `fk watch %s`, its PGN4 with `fk export %s`", id, id, id)
}

func summarize(m *matchv1.Match, playerID string, found client.Found, reconnects int) result {
	res := result{
		MatchID: found.MatchID, PlayerID: playerID, Seat: seatName(found.Seat),
		Status: m.GetStatus().String(), Plies: m.GetPly(), Reconnects: reconnects,
		Players: map[string]string{},
	}
	for _, s := range m.GetSeats() {
		res.Players[seatName(s.GetSeat())] = s.GetPlayer().GetPlayerId()
	}
	if r := m.GetResult(); r != nil {
		res.Termination = r.GetTermination().String()
		res.Points = map[string]int32{}
		for _, p := range r.GetPoints() {
			res.Points[seatName(p.GetSeat())] = p.GetPoints()
		}
		for i, seat := range r.GetRanking() {
			res.Ranking = append(res.Ranking, seatName(seat))
			if seat == found.Seat {
				res.Rank = i + 1
			}
		}
	}
	return res
}

func (a *app) watch(ctx context.Context, args []string) error {
	fs := a.flags("watch")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return errors.New("usage: fk watch MATCH")
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	id := operands[0]
	sc := &screen{}
	final, err := c.Follow(ctx, id, client.FollowOptions{RefreshBoard: true, Check: true}, func(u client.Update) error {
		if mv := u.Event.GetMoveApplied(); mv != nil {
			sc.moves.add(mv.GetEffects(), gamev1.Seat_SEAT_UNSPECIFIED)
		}
		a.draw(u.Match, sc)
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return nil // Ctrl-C: stop watching
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", id, err)
	}
	// The last board drawn has the result; draw it only if it was not
	// drawn yet (a follower that ended without a final update).
	if final.GetVersion() != sc.drawn {
		a.draw(final, sc)
	}
	fmt.Fprintln(a.stdout, replayHint(id))
	return nil
}

func (a *app) export(ctx context.Context, args []string) error {
	fs := a.flags("export")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return errors.New("usage: fk export MATCH")
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Match.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: operands[0]})
	if err != nil {
		return fmt.Errorf("export %s: %w", operands[0], err)
	}
	fmt.Fprint(a.stdout, resp.GetPgn4())
	return nil
}

func (a *app) rating(ctx context.Context, args []string) error {
	fs := a.flags("rating")
	ruleSet := fs.String("rule-set", "fourkingdoms", "rating pool (rule set)")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	c, s, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	player := s.PlayerID
	if len(operands) > 0 {
		player = operands[0]
	}
	resp, err := c.Rating.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: player, RuleSet: *ruleSet})
	if status.Code(err) == codes.NotFound && len(operands) == 0 {
		// Yourself before your first rated game: not an error.
		fmt.Fprintf(a.stdout, "%s in %s: no rated game yet (provisional until established)\n", s.DisplayName, *ruleSet)
		return nil
	}
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("rating of %s: no player with a rated game in %s has this id", player, *ruleSet)
	}
	if err != nil {
		return fmt.Errorf("rating of %s: %w", player, err)
	}
	fmt.Fprintln(a.stdout, ratingLine(resp.GetRating()))
	return nil
}

// ratingLine describes a rating: the player's display name (the id if the
// service has none), the rating, and while provisional how many more games
// the service estimates.
func ratingLine(r *ratingv1.Rating) string {
	name := cmp.Or(r.GetDisplayName(), r.GetPlayerId())
	note := ""
	switch {
	case r.GetIsDefault():
		note = " (no rated game yet)"
	case r.GetProvisional() && r.GetGamesToEstablish() > 0:
		note = fmt.Sprintf(" (provisional: about %d more games)", r.GetGamesToEstablish())
	case r.GetProvisional():
		note = " (provisional)"
	}
	return fmt.Sprintf("%s in %s: %d%s, %d games (mu %.1f, sigma %.1f)", name, r.GetRuleSet(),
		r.GetDisplayRating(), note, r.GetGamesPlayed(), r.GetMu(), r.GetSigma())
}

func (a *app) leaderboard(ctx context.Context, args []string) error {
	fs := a.flags("leaderboard")
	ruleSet := fs.String("rule-set", "fourkingdoms", "rating pool (rule set)")
	size := fs.Int("size", 20, "entries to show per section (at most 100)")
	provisional := fs.Bool("provisional", false, "also list the players whose rating is still provisional, in their own section")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("fk leaderboard: unexpected argument %q", operands[0])
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	get := func(section ratingv1.LeaderboardSection, size int) (*ratingv1.GetLeaderboardResponse, error) {
		resp, err := c.Rating.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: *ruleSet, PageSize: int32(size), Section: section})
		if err != nil {
			return nil, fmt.Errorf("leaderboard: %w", err)
		}
		return resp, nil
	}
	ranked, err := get(ratingv1.LeaderboardSection_LEADERBOARD_SECTION_RANKED, *size)
	if err != nil {
		return err
	}
	// Without --provisional one entry is enough: the section's size says
	// how many players are left out.
	provSize := 1
	if *provisional {
		provSize = *size
	}
	prov, err := get(ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL, provSize)
	if err != nil {
		return err
	}
	writeLeaderboard(a.stdout, ranked, prov, *provisional)
	return nil
}

// writeLeaderboard prints the ranked section and, with showProvisional,
// the provisional section under it (each player with the games they still
// need); otherwise a line saying how many provisional players are left
// out and how to list them.
func writeLeaderboard(w io.Writer, ranked, prov *ratingv1.GetLeaderboardResponse, showProvisional bool) {
	entry := func(e *ratingv1.LeaderboardEntry) string {
		return fmt.Sprintf("%3d. %-24s %5d  %d games", e.GetRank(), cmp.Or(e.GetPlayer().GetDisplayName(), e.GetPlayer().GetPlayerId()), e.GetDisplayRating(), e.GetGamesPlayed())
	}
	more := func(shown int, total uint32) {
		if n := int(total) - shown; n > 0 {
			fmt.Fprintf(w, "     ... and %d more (--size shows up to 100)\n", n)
		}
	}
	if len(ranked.GetEntries()) == 0 {
		fmt.Fprintln(w, "nobody is ranked yet: a rating is provisional until it is established (fk rating shows how many games a player still needs)")
	}
	for _, e := range ranked.GetEntries() {
		fmt.Fprintln(w, entry(e))
	}
	more(len(ranked.GetEntries()), ranked.GetSectionSize())
	n := prov.GetSectionSize()
	switch {
	case n == 0:
		return
	case !showProvisional:
		fmt.Fprintf(w, "%d provisional %s not shown: fk leaderboard --provisional lists them\n", n, plural(int(n), "player", "players"))
		return
	}
	fmt.Fprintf(w, "\nprovisional (%d %s, ranked once established):\n", n, plural(int(n), "player", "players"))
	for _, e := range prov.GetEntries() {
		line := entry(e)
		if g := e.GetGamesToEstablish(); g > 0 {
			line += fmt.Sprintf(", about %d more", g)
		}
		fmt.Fprintln(w, line)
	}
	more(len(prov.GetEntries()), n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// findMatch waits in queue. With live set it keeps a status line that
// ticks every second: the time waited and the rating window of the latest
// update from the matchmaker. A line "quit" (or "exit") from lines leaves
// the queue and returns errLeft.
func (a *app) findMatch(ctx context.Context, c *client.Client, queue string, live bool, lines <-chan string) (client.Found, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type progress struct {
		waited    time.Duration
		at        time.Time
		low, high int32
	}
	updates := make(chan progress, 1)
	type outcome struct {
		found client.Found
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		f, err := c.FindMatch(ctx, queue, func(st *matchmakingv1.Searching) {
			p := progress{st.GetWaited().AsDuration(), time.Now(), st.GetRatingWindowLow(), st.GetRatingWindowHigh()}
			select {
			case <-updates: // replace an update not drawn yet
			default:
			}
			updates <- p
		})
		done <- outcome{f, err}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last progress
	draw := func() {
		if !live {
			return
		}
		if last.at.IsZero() {
			fmt.Fprintf(a.stdout, "\rjoining %s ...", queue)
			return
		}
		waited := (last.waited + time.Since(last.at)).Truncate(time.Second)
		window := ""
		if last.low != 0 || last.high != 0 {
			window = fmt.Sprintf(", opponents rated %d-%d", last.low, last.high)
		}
		fmt.Fprintf(a.stdout, "\rsearching in %s: %s waited%s (\"quit\" or Ctrl-C leaves the queue)   ", queue, waited, window)
	}
	draw()
	left := false
	for {
		select {
		case p := <-updates:
			last = p
			draw()
		case <-tick.C:
			draw()
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if line == "quit" || line == "exit" {
				left = true
				cancel() // FindMatch cancels the ticket
			}
		case o := <-done:
			if left {
				return client.Found{}, errLeft
			}
			return o.found, o.err
		}
	}
}
