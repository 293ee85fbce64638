package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

func (a *app) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("fk "+name, flag.ContinueOnError)
	fs.SetOutput(a.stdout)
	return fs
}

func (a *app) login(ctx context.Context, args []string) error {
	fs := a.flags("login")
	name := fs.String("name", "", "display name (empty: the server picks one)")
	if err := fs.Parse(args); err != nil {
		return err
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
	s := session{PlayerID: resp.GetPlayerId(), DisplayName: resp.GetDisplayName(), Token: resp.GetToken(), ExpiresAt: resp.GetExpiresAt().AsTime()}
	if err := saveSession(a.Home, s); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "signed in as %s (%s); token kept in %s\n", s.DisplayName, s.PlayerID, sessionPath(a.Home))
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, s, err := a.dial()
	if err != nil {
		return err
	}
	defer c.Close()

	found, err := a.findMatch(ctx, c, *queue, !*asJSON)
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(a.stdout, "\rmatched: match %s, you play %s%20s\n", found.MatchID, seatName(found.Seat), "")
	}

	var final *matchv1.Match
	reconnects := 0
	if *auto != "" {
		level, lerr := brain.ParseLevel(*auto)
		if lerr != nil {
			return lerr
		}
		br := brain.New(level, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
		choose := func(_ context.Context, m *matchv1.Match) (string, error) {
			return br.Choose(brain.Turn{RuleSet: m.GetRuleSet(), FEN4: m.GetFen4(), Seat: rules.Seat(found.Seat - 1), Legal: m.GetLegalMoves(), Game: m.GetMatchId()})
		}
		observe := func(u client.Update) {
			reconnects = u.Reconnects
			if !*asJSON {
				if u.Event.GetMoveApplied() != nil {
					e := u.Event.GetMoveApplied().GetEffects()
					fmt.Fprintf(a.stdout, "%4d %-6s %s\n", u.Match.GetPly(), seatName(e.GetSeat()), e.GetMove())
				}
			}
		}
		final, err = c.PlayAuto(ctx, found.MatchID, found.Seat, choose, observe)
	} else {
		final, reconnects, err = a.interactive(ctx, c, found)
	}
	if err != nil {
		return err
	}
	res := summarize(final, s.PlayerID, found, reconnects)
	if *asJSON {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	if *auto != "" {
		fmt.Fprintln(a.stdout, resultText(final)) // the interactive board shows it already
	}
	if res.Rank > 0 {
		fmt.Fprintf(a.stdout, "you finished %d. — see your rating with `fk rating`\n", res.Rank)
	}
	return nil
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: fk watch MATCH")
	}
	c, _, err := a.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	final, err := c.Follow(ctx, fs.Arg(0), client.FollowOptions{RefreshBoard: true}, func(u client.Update) error {
		a.draw(u.Match, gamev1.Seat_SEAT_UNSPECIFIED, "")
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, resultText(final))
	return nil
}

func (a *app) export(ctx context.Context, args []string) error {
	fs := a.flags("export")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: fk export MATCH")
	}
	c, _, err := a.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Match.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: fs.Arg(0)})
	if err != nil {
		return fmt.Errorf("export %s: %w", fs.Arg(0), err)
	}
	fmt.Fprint(a.stdout, resp.GetPgn4())
	return nil
}

func (a *app) rating(ctx context.Context, args []string) error {
	fs := a.flags("rating")
	ruleSet := fs.String("rule-set", "fourkingdoms", "rating pool (rule set)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, s, err := a.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	player := s.PlayerID
	if fs.NArg() > 0 {
		player = fs.Arg(0)
	}
	resp, err := c.Rating.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: player, RuleSet: *ruleSet})
	if err != nil {
		return fmt.Errorf("rating of %s: %w", player, err)
	}
	r := resp.GetRating()
	note := ""
	switch {
	case r.GetIsDefault():
		note = " (no rated game yet)"
	case r.GetProvisional():
		note = " (provisional)"
	}
	fmt.Fprintf(a.stdout, "%s in %s: %d%s, %d games (mu %.1f, sigma %.1f)\n", player, *ruleSet,
		r.GetDisplayRating(), note, r.GetGamesPlayed(), r.GetMu(), r.GetSigma())
	return nil
}

func (a *app) leaderboard(ctx context.Context, args []string) error {
	fs := a.flags("leaderboard")
	ruleSet := fs.String("rule-set", "fourkingdoms", "rating pool (rule set)")
	size := fs.Int("size", 20, "entries to show (at most 100)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, _, err := a.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Rating.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: *ruleSet, PageSize: int32(*size)})
	if err != nil {
		return fmt.Errorf("leaderboard: %w", err)
	}
	if len(resp.GetEntries()) == 0 {
		fmt.Fprintln(a.stdout, "nobody on the leaderboard yet (provisional players are left out)")
	}
	for _, e := range resp.GetEntries() {
		fmt.Fprintf(a.stdout, "%3d. %-24s %5d  %d games\n", e.GetRank(), e.GetPlayer().GetDisplayName(), e.GetDisplayRating(), e.GetGamesPlayed())
	}
	return nil
}

// findMatch waits in queue. With live set it keeps a status line that
// ticks every second: the time waited and the rating window of the latest
// update from the matchmaker.
func (a *app) findMatch(ctx context.Context, c *client.Client, queue string, live bool) (client.Found, error) {
	if !live {
		return c.FindMatch(ctx, queue, nil)
	}
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
		if last.at.IsZero() {
			fmt.Fprintf(a.stdout, "\rjoining %s ...", queue)
			return
		}
		waited := (last.waited + time.Since(last.at)).Truncate(time.Second)
		fmt.Fprintf(a.stdout, "\rsearching in %s: %s waited, opponents rated %d-%d (Ctrl-C to leave the queue)   ", queue, waited, last.low, last.high)
	}
	draw()
	for {
		select {
		case p := <-updates:
			last = p
			draw()
		case <-tick.C:
			draw()
		case o := <-done:
			return o.found, o.err
		}
	}
}
