package match_test

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// FuzzPremoveHandlers drives SetPremoves and ClearPremoves on a real
// Redis with any caller, seat and moves (one per line): a request is
// either refused with one of the documented errors and changes nothing,
// or stores exactly the queue it answers, which only its owner sees;
// neither ever adds an event.
func FuzzPremoveHandlers(f *testing.F) {
	rdb, _ := redistest.Standalone(f)
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(f)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	svc, err := match.New(st, nil, match.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		f.Fatal(err)
	}
	req := &matchv1.CreateMatchRequest{RequestId: f.Name(), TimeControl: &gamev1.TimeControl{Name: "60+0"}}
	callers := []match.Caller{{ID: "red"}, {ID: "blue"}, {ID: "yellow"}, {ID: "green"}, {ID: "spectator"}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: callers[s].ID}})
	}
	m, err := svc.Create(f.Context(), match.Caller{ID: "fuzz", Service: true}, req)
	if err != nil {
		f.Fatal(err)
	}
	ids := []string{m.ID, store.NewID(3), "not-an-id"}

	f.Add(uint8(1), int32(0), "m4-l4\nm5-l5", false, uint8(0))
	f.Add(uint8(0), int32(1), "d2-d3", false, uint8(0))
	f.Add(uint8(3), int32(4), "b4-c4\nb5-c5\nb6-c6\nb7-c7", false, uint8(0))
	f.Add(uint8(2), int32(0), "d13-z99", false, uint8(0))
	f.Add(uint8(4), int32(0), "m4-l4", false, uint8(0))
	f.Add(uint8(1), int32(0), "", true, uint8(0))
	f.Add(uint8(2), int32(9), "O-O", false, uint8(1))
	f.Fuzz(func(t *testing.T, who uint8, seat int32, moves string, clear bool, match_ uint8) {
		c := callers[int(who)%len(callers)]
		id := ids[int(match_)%len(ids)]
		var list []string
		if moves != "" {
			list = strings.Split(moves, "\n")
		}
		before, berr := svc.Get(t.Context(), c, m.ID)
		if berr != nil {
			t.Fatal(berr)
		}
		var q match.Premoves
		if clear {
			q, err = svc.ClearPremoves(t.Context(), c, id, gamev1.Seat(seat))
		} else {
			q, err = svc.SetPremoves(t.Context(), c, id, gamev1.Seat(seat), list)
		}
		after, aerr := svc.Get(t.Context(), c, m.ID)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if after.Version != before.Version {
			t.Fatalf("version %d -> %d", before.Version, after.Version)
		}
		if err != nil {
			for _, known := range []error{match.ErrInvalid, rules.ErrBadMoveText, match.ErrNotPlayer, match.ErrYourTurn,
				rules.ErrSeatNotLive, match.ErrFinished, match.ErrNotFound} {
				if errors.Is(err, known) {
					if !samePremoves(before.Premoves, after.Premoves) {
						t.Fatalf("refused (%v) but the queues changed: %+v -> %+v", err, before.Premoves, after.Premoves)
					}
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if id != m.ID || c.ID == "spectator" || (!clear && len(list) > match.MaxPremoves) {
			t.Fatalf("accepted: caller %s, match %s, %d moves", c.ID, id, len(list))
		}
		// Red is to move: it may only clear (a no-op).
		set := !clear && len(list) > 0
		if (set && (q.Seat == rules.Red || !slices.Equal(q.Moves, list))) || (!set && len(q.Moves) != 0) {
			t.Fatalf("answered %+v for %q (clear %v)", q, list, clear)
		}
		if q.Change != match.PremoveNone && !slices.ContainsFunc(after.Premoves, func(p match.Premoves) bool {
			return p.Seat == q.Seat && p.Change == q.Change && slices.Equal(p.Moves, q.Moves)
		}) {
			t.Fatalf("answered %+v, the owner sees %+v", q, after.Premoves)
		}
		// Nobody else sees it.
		for _, o := range callers {
			if o.ID == c.ID {
				continue
			}
			v, err := svc.Get(t.Context(), o, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range v.Premoves {
				if v.Seats[p.Seat].Player.ID != o.ID {
					t.Fatalf("%s sees the queue of %v", o.ID, p.Seat)
				}
			}
		}
	})
}

func samePremoves(a, b []match.Premoves) bool {
	return slices.EqualFunc(a, b, func(x, y match.Premoves) bool {
		return x.Seat == y.Seat && x.Change == y.Change && x.Version == y.Version && x.Move == y.Move && slices.Equal(x.Moves, y.Moves)
	})
}
