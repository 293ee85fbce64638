package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var tableSettings = TableSettings{IdleTTL: 30 * time.Minute, ClosedRetention: time.Minute}

func newTable(t *testing.T, s *Store, host string, bots ...int) *Table {
	t.Helper()
	tb := &Table{RuleSet: "fourkingdoms", Clock: Clock{InitialMs: 300000, IncrementMs: 5000}}
	for _, i := range bots {
		tb.Seats[i] = TableSeat{Bot: true, Level: "greedy"}
	}
	got, err := s.CreateTable(t.Context(), tb, player(host), 0, tableSettings, time.UnixMilli(1_700_000_000_000))
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return got
}

func TestCodes(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		c := NewCode()
		if len(c) != CodeLen || seen[c] {
			t.Fatalf("NewCode = %q (len %d, seen %v)", c, len(c), seen[c])
		}
		seen[c] = true
		for _, typed := range []string{c, strings.ToLower(c), DisplayCode(c), " " + strings.ToLower(DisplayCode(c))} {
			if got, err := ParseCode(typed); err != nil || got != c {
				t.Fatalf("ParseCode(%q) = %q, %v; want %q", typed, got, err, c)
			}
		}
	}
	if got, err := ParseCode("ilo0-0000-0000"); err != nil || got != "110000000000" {
		t.Errorf("ParseCode reads I, L, O as digits: got %q, %v", got, err)
	}
	for _, bad := range []string{"", "ABC", "7KQ2-M9XD-4TBAX", "7KQ2-M9XD-4TBU", "7KQ2-M9XD-4TB!", "7KQ2-M9XD-4TBé"} {
		if _, err := ParseCode(bad); !errors.Is(err, ErrBadCode) {
			t.Errorf("ParseCode(%q) error = %v, want ErrBadCode", bad, err)
		}
	}
}

func TestJoinAndLeaveTable(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		tb := newTable(t, s, "host", 3)
		if tb.State != TableOpen || tb.Host != "host" || tb.SeatOf("host") != 0 || tb.Version != 1 {
			t.Fatalf("new table = %+v", tb)
		}
		joined, err := s.JoinTable(ctx, tb.Code, player("a"), 2, tableSettings, now)
		if err != nil || joined.SeatOf("a") != 2 || joined.Version != 2 {
			t.Fatalf("JoinTable(seat 2) = %+v, %v", joined, err)
		}
		again, err := s.JoinTable(ctx, tb.Code, player("a"), -1, tableSettings, now)
		if err != nil || again.Version != 2 {
			t.Fatalf("JoinTable again = %+v, %v; want unchanged", again, err)
		}
		refusals := []struct {
			name   string
			player string
			seat   int
			want   error
		}{
			{"a taken seat", "b", 2, ErrSeatTaken},
			{"a bot seat", "b", 3, ErrSeatTaken},
		}
		for _, r := range refusals {
			if _, err := s.JoinTable(ctx, tb.Code, player(r.player), r.seat, tableSettings, now); !errors.Is(err, r.want) {
				t.Errorf("%s: error %v, want %v", r.name, err, r.want)
			}
		}
		if got, _ := s.Table(ctx, tb.Code); got.Version != 2 {
			t.Errorf("refusals changed the table: version %d", got.Version)
		}
		if _, err := s.JoinTable(ctx, "000000000000", player("b"), -1, tableSettings, now); !errors.Is(err, ErrTableNotFound) {
			t.Errorf("unknown code: %v, want ErrTableNotFound", err)
		}
		if _, err := s.JoinTable(ctx, tb.Code, player("b"), -1, tableSettings, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.JoinTable(ctx, tb.Code, player("c"), -1, tableSettings, now); !errors.Is(err, ErrTableFull) {
			t.Errorf("full table: %v, want ErrTableFull", err)
		}

		// The host leaves: the table passes to a (joined first).
		left, err := s.LeaveTable(ctx, tb.Code, "host", tableSettings, now)
		if err != nil || left.Host != "a" || left.SeatOf("host") != -1 || left.State != TableOpen {
			t.Fatalf("host leaves = %+v, %v; want a as host", left, err)
		}
		if same, err := s.LeaveTable(ctx, tb.Code, "host", tableSettings, now); err != nil || same.Version != left.Version {
			t.Errorf("leaving again = %+v, %v; want unchanged", same, err)
		}
		if _, err := s.LeaveTable(ctx, tb.Code, "a", tableSettings, now); err != nil {
			t.Fatal(err)
		}
		last, err := s.LeaveTable(ctx, tb.Code, "b", tableSettings, now)
		if err != nil || last.State != TableClosed {
			t.Fatalf("last human leaves = %+v, %v; want closed", last, err)
		}
		if _, err := s.JoinTable(ctx, tb.Code, player("c"), -1, tableSettings, now); !errors.Is(err, ErrTableNotFound) {
			t.Errorf("joining a closed table: %v, want ErrTableNotFound", err)
		}
	})
}

// One seat left, many players: exactly one gets it, and the losers' live
// pointers are free again (they can enqueue).
func TestRaceForTheLastSeat(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		tb := newTable(t, s, "host", 1, 2)
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Go(func() {
				_, results[i] = s.JoinTable(ctx, tb.Code, player(fmt.Sprintf("p%d", i)), -1, tableSettings, now)
			})
		}
		wg.Wait()
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case errors.Is(err, ErrTableFull):
				if _, _, err := s.Enqueue(ctx, queueA, player(fmt.Sprintf("p%d", i)), now); err != nil {
					t.Errorf("loser p%d cannot enqueue: %v", i, err)
				}
			default:
				t.Errorf("p%d: %v", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("%d players won the last seat, want 1", won)
		}
	})
}

// The one-live rule, both ways.
func TestSeatedOrQueued(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		tb := newTable(t, s, "host")
		if _, _, err := s.Enqueue(ctx, queueA, player("host"), now); !errors.Is(err, ErrSeated) {
			t.Errorf("Enqueue while seated: %v, want ErrSeated", err)
		}
		if _, err := s.CreateTable(ctx, &Table{}, player("host"), 0, tableSettings, now); !errors.Is(err, ErrSeated) {
			t.Errorf("a second table: %v, want ErrSeated", err)
		}
		if _, _, err := s.Enqueue(ctx, queueA, player("q"), now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.JoinTable(ctx, tb.Code, player("q"), -1, tableSettings, now); !errors.Is(err, ErrSeated) {
			t.Errorf("JoinTable with a live ticket: %v, want ErrSeated", err)
		}
		if got, _ := s.Table(ctx, tb.Code); got.Version != 1 {
			t.Errorf("refused join changed the table: version %d", got.Version)
		}
		if _, err := s.LeaveTable(ctx, tb.Code, "host", tableSettings, now); err != nil {
			t.Fatal(err)
		}
		if _, existing, err := s.Enqueue(ctx, queueA, player("host"), now); err != nil || existing {
			t.Errorf("Enqueue after leaving = %v, %v; want a new ticket", existing, err)
		}
	})
}

func TestStartTable(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		tb := newTable(t, s, "host", 3)
		start := TableStart{RequestID: tb.RequestID(), Seed: "18446744073709551615",
			Bots: map[string]StartBot{"3": {Level: "greedy", TicketID: "t1", Player: botPlayer("b1")}}}
		if _, err := s.BeginStart(ctx, tb.Code, "a", tb.Version, start, tableSettings, now); !errors.Is(err, ErrNotHost) {
			t.Errorf("BeginStart by a non-host: %v, want ErrNotHost", err)
		}
		if _, err := s.BeginStart(ctx, tb.Code, "host", tb.Version-1, start, tableSettings, now); !errors.Is(err, ErrTableChanged) {
			t.Errorf("BeginStart on an old version: %v, want ErrTableChanged", err)
		}
		got, err := s.BeginStart(ctx, tb.Code, "host", tb.Version, start, tableSettings, now)
		if err != nil || got.State != TableStarting || got.Start == nil || got.Start.Seed != start.Seed || got.Start.Bots["3"].Player.ID != "b1" {
			t.Fatalf("BeginStart = %+v, %v", got, err)
		}
		other := start
		other.RequestID = "other"
		if again, err := s.BeginStart(ctx, tb.Code, "host", tb.Version, other, tableSettings, now); err != nil || again.Start.RequestID != start.RequestID {
			t.Errorf("a second BeginStart = %+v, %v; want the first start kept", again, err)
		}
		for name, err := range map[string]error{
			"join":  func() error { _, err := s.JoinTable(ctx, tb.Code, player("x"), -1, tableSettings, now); return err }(),
			"leave": func() error { _, err := s.LeaveTable(ctx, tb.Code, "host", tableSettings, now); return err }(),
		} {
			if !errors.Is(err, ErrTableStarted) {
				t.Errorf("%s while starting: %v, want ErrTableStarted", name, err)
			}
		}
		if _, _, err := s.Enqueue(ctx, queueA, player("host"), now); !errors.Is(err, ErrSeated) {
			t.Errorf("Enqueue while starting: %v, want ErrSeated", err)
		}
		done, err := s.FinishStart(ctx, tb.Code, "m1", tableSettings, now)
		if err != nil || done.State != TableStarted || done.MatchID != "m1" || done.Seats[3].Player == nil || done.Seats[3].Player.ID != "b1" {
			t.Fatalf("FinishStart = %+v, %v", done, err)
		}
		if again, err := s.FinishStart(ctx, tb.Code, "m2", tableSettings, now); err != nil || again.MatchID != "m1" {
			t.Errorf("FinishStart again = %+v, %v; want m1 kept", again, err)
		}
		if _, existing, err := s.Enqueue(ctx, queueA, player("host"), now); err != nil || existing {
			t.Errorf("Enqueue after the start = %v, %v; want a new ticket", existing, err)
		}
	})
}

func TestGuessLimit(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		lim := GuessLimit{Max: 3, Window: time.Minute}
		for i := range 3 {
			if ok, _, err := s.GuessesLeft(ctx, "g", lim); err != nil || !ok {
				t.Fatalf("guess %d refused: %v", i, err)
			}
			if err := s.CountGuess(ctx, "g", lim); err != nil {
				t.Fatal(err)
			}
		}
		ok, wait, err := s.GuessesLeft(ctx, "g", lim)
		if err != nil || ok || wait <= 0 || wait > time.Minute {
			t.Errorf("after 3 guesses: ok %v, wait %v, %v; want refused for up to a minute", ok, wait, err)
		}
		if ok, _, _ := s.GuessesLeft(ctx, "other", lim); !ok {
			t.Error("another player is limited too")
		}
	})
}

func TestEmptySeatAsArray(t *testing.T) {
	t.Parallel()
	tb, err := decodeTable(`{"code":"C","seats":[{"pl":{"p":"h"},"j":1},[],{"bot":true,"lvl":"greedy"},{}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Seats[0].Player == nil || tb.Seats[0].Player.ID != "h" || tb.Seats[1] != (TableSeat{}) || !tb.Seats[2].Bot || tb.Seats[3] != (TableSeat{}) {
		t.Errorf("seats = %+v", tb.Seats)
	}
}
