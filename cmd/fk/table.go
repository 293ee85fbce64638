package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

const tableUsage = `usage: fk table SUBCOMMAND

  create [--time TC] [--rule-set NAME] [--rated] [--seat SEAT] [--bot SEAT=LEVEL]...
                         open a private table and print its invite code and link
  join CODE [--seat SEAT]
                         take a seat (the first free one unless --seat)
  leave CODE             give your seat up (a leaving host hands the table on)
  start CODE [--bots LEVEL]
                         start the match (host only); --bots fills free seats with bots
  play CODE [--auto LEVEL] [--json] [--fixed]
                         join if needed, wait for the start, and play the match

SEAT is red, blue, yellow or green; LEVEL random or greedy; CODE as given
(dashes and case do not matter).`

// table runs "fk table SUBCOMMAND".
func (a *app) table(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(a.stdout, tableUsage)
		if len(args) == 0 {
			return errors.New("fk table: no subcommand")
		}
		return nil
	}
	switch args[0] {
	case "create":
		return a.tableCreate(ctx, args[1:])
	case "join":
		return a.tableJoin(ctx, args[1:])
	case "leave":
		return a.tableLeave(ctx, args[1:])
	case "start":
		return a.tableStart(ctx, args[1:])
	case "play":
		return a.tablePlay(ctx, args[1:])
	}
	fmt.Fprintln(a.stdout, tableUsage)
	return fmt.Errorf("fk table: unknown subcommand %q", args[0])
}

// seatFlag reads a seat name ("" is no seat).
func seatFlag(name string) (gamev1.Seat, error) {
	if name == "" {
		return gamev1.Seat_SEAT_UNSPECIFIED, nil
	}
	v, ok := gamev1.Seat_value["SEAT_"+strings.ToUpper(name)]
	if !ok || v == 0 {
		return 0, fmt.Errorf("unknown seat %q: red, blue, yellow or green", name)
	}
	return gamev1.Seat(v), nil
}

// botSeats collects repeated --bot SEAT=LEVEL flags.
type botSeats []*matchmakingv1.TableSeat

func (b *botSeats) String() string { return fmt.Sprint(len(*b), " bot seats") }

func (b *botSeats) Set(v string) error {
	name, level, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want SEAT=LEVEL, got %q", v)
	}
	seat, err := seatFlag(name)
	if err != nil {
		return err
	}
	if _, err := brain.ParseLevel(level); err != nil {
		return err
	}
	*b = append(*b, &matchmakingv1.TableSeat{Seat: seat, Mode: matchmakingv1.SeatMode_SEAT_MODE_BOT, BotLevel: level})
	return nil
}

// oneCode returns the single operand of a table subcommand.
func oneCode(sub string, operands []string) (string, error) {
	if len(operands) != 1 {
		return "", fmt.Errorf("fk table %s: give the table's code (and nothing else)", sub)
	}
	return operands[0], nil
}

func (a *app) tableCreate(ctx context.Context, args []string) error {
	fs := a.flags("table create")
	tc := fs.String("time", "5+5", "time control (as in the queue names: 5+5, 1|15 d)")
	ruleSet := fs.String("rule-set", "", "rule set (default: fourkingdoms)")
	rated := fs.Bool("rated", false, "the match counts for ratings")
	seat := fs.String("seat", "", "your seat (default: the first open one)")
	var bots botSeats
	fs.Var(&bots, "bot", "a bot seat, SEAT=LEVEL (repeatable)")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("fk table create: unexpected argument %q", operands[0])
	}
	host, err := seatFlag(*seat)
	if err != nil {
		return err
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Matchmaking.CreateTable(ctx, &matchmakingv1.CreateTableRequest{
		RuleSet: *ruleSet, TimeControl: &gamev1.TimeControl{Name: *tc}, Rated: *rated, Seats: bots, HostSeat: host,
	})
	if err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	t := resp.GetTable()
	fmt.Fprintf(a.stdout, "table %s\n", t.GetCode())
	if t.GetLink() != "" {
		fmt.Fprintf(a.stdout, "link  %s\n", t.GetLink())
	}
	a.printSeats(t)
	fmt.Fprintf(a.stdout, "friends join with `fk table play %s`; start with `fk table start %s [--bots LEVEL]`\n", t.GetCode(), t.GetCode())
	return nil
}

func (a *app) printSeats(t *matchmakingv1.Table) {
	for _, s := range t.GetSeats() {
		who := "(open)"
		switch {
		case s.GetPlayer() != nil:
			who = s.GetPlayer().GetDisplayName()
			if s.GetPlayer().GetPlayerId() == t.GetHostPlayerId() {
				who += " (host)"
			}
		case s.GetMode() == matchmakingv1.SeatMode_SEAT_MODE_BOT:
			who = "(bot, " + s.GetBotLevel() + ")"
		}
		fmt.Fprintf(a.stdout, "  %-7s %s\n", seatName(s.GetSeat()), who)
	}
}

func (a *app) tableJoin(ctx context.Context, args []string) error {
	fs := a.flags("table join")
	seat := fs.String("seat", "", "the seat wanted (default: the first free one)")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	code, err := oneCode("join", operands)
	if err != nil {
		return err
	}
	want, err := seatFlag(*seat)
	if err != nil {
		return err
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Matchmaking.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: code, Seat: want})
	if err != nil {
		return fmt.Errorf("join table: %w", err)
	}
	fmt.Fprintf(a.stdout, "you sit at table %s as %s\n", resp.GetTable().GetCode(), seatName(resp.GetSeat()))
	a.printSeats(resp.GetTable())
	return nil
}

func (a *app) tableLeave(ctx context.Context, args []string) error {
	operands, err := parse(a.flags("table leave"), args)
	if err != nil {
		return err
	}
	code, err := oneCode("leave", operands)
	if err != nil {
		return err
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Matchmaking.LeaveTable(ctx, &matchmakingv1.LeaveTableRequest{Code: code})
	if err != nil {
		return fmt.Errorf("leave table: %w", err)
	}
	if resp.GetTable().GetState() == matchmakingv1.TableState_TABLE_STATE_CLOSED {
		fmt.Fprintf(a.stdout, "left table %s; it closed\n", resp.GetTable().GetCode())
		return nil
	}
	fmt.Fprintf(a.stdout, "left table %s\n", resp.GetTable().GetCode())
	return nil
}

func (a *app) tableStart(ctx context.Context, args []string) error {
	fs := a.flags("table start")
	bots := fs.String("bots", "", "fill the free open seats with bots of this level (random or greedy)")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	code, err := oneCode("start", operands)
	if err != nil {
		return err
	}
	if *bots != "" {
		if _, err := brain.ParseLevel(*bots); err != nil {
			return err
		}
	}
	c, _, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Matchmaking.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: code, FillWithBots: *bots != "", FillBotLevel: *bots})
	if err != nil {
		return fmt.Errorf("start table: %w", err)
	}
	fmt.Fprintf(a.stdout, "table %s started match %s\n", resp.GetTable().GetCode(), resp.GetTable().GetMatchId())
	a.printSeats(resp.GetTable())
	return nil
}

// tablePlay joins the table (a seated player keeps their seat), waits for
// the host to start it, and plays the match like `fk play`.
func (a *app) tablePlay(ctx context.Context, args []string) error {
	fs := a.flags("table play")
	auto := fs.String("auto", "", "let a bot brain play: random or greedy (non-interactive)")
	asJSON := fs.Bool("json", false, "print only a final JSON result line")
	fixed := fs.Bool("fixed", false, "draw the board with Red at the bottom instead of turning it to your seat")
	operands, err := parse(fs, args)
	if err != nil {
		return err
	}
	code, err := oneCode("play", operands)
	if err != nil {
		return err
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
	joined, err := c.Matchmaking.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: code})
	if err != nil {
		return fmt.Errorf("join table: %w", err)
	}
	if !*asJSON {
		fmt.Fprintf(a.stdout, "you sit at table %s as %s; waiting for the host to start (Ctrl-C leaves)\n", joined.GetTable().GetCode(), seatName(joined.GetSeat()))
	}
	var lines <-chan string
	if *auto == "" {
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		lines = readLines(lctx, a.stdin)
	}
	seen := uint64(0)
	found, err := c.WaitTable(ctx, code, s.PlayerID, func(t *matchmakingv1.Table) {
		if !*asJSON && t.GetVersion() != seen {
			seen = t.GetVersion()
			a.printSeats(t)
		}
	})
	if err != nil && ctx.Err() != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		if _, lerr := c.Matchmaking.LeaveTable(lctx, &matchmakingv1.LeaveTableRequest{Code: code}); lerr == nil && !*asJSON {
			fmt.Fprintf(a.stdout, "\nleft table %s\n", code)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(a.stdout, "the table started: match %s, you play %s\n", found.MatchID, seatName(found.Seat))
	}
	return a.playFound(ctx, c, s, found, playMode{auto: *auto, level: level, asJSON: *asJSON, fixed: *fixed}, lines)
}
