package consumer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

var finishedAt = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

var seats = [4]gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN}

// event returns a valid MatchFinished of the players finishing in order:
// order[i] plays seat i and scores 40-10i.
func event(match, ruleSet string, order ...string) *eventsv1.MatchFinished {
	ev := &eventsv1.MatchFinished{
		MatchId:    match,
		RuleSet:    ruleSet,
		Result:     &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
		FinishedAt: timestamppb.New(finishedAt),
		Plies:      120,
	}
	for i, id := range order {
		ev.Players = append(ev.Players, &gamev1.SeatPlayer{Seat: seats[i], Player: &gamev1.Player{PlayerId: id, DisplayName: strings.ToUpper(id)}})
		ev.Result.Points = append(ev.Result.Points, &gamev1.SeatPoints{Seat: seats[i], Points: int32(40 - 10*i)})
		ev.Result.Ranking = append(ev.Result.Ranking, seats[i])
	}
	return ev
}

// contract is the layout of the entries the match service publishes.
var contract = eventstream.MatchFinished()

// entry returns the fields of ev's stream entry as Redis returns them.
func entry(ev *eventsv1.MatchFinished) map[string]any {
	data, err := proto.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return map[string]any{contract.TypeField(): contract.Type(), contract.DataField(): string(data)}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values func() map[string]any
		want   []string // player ids first to fourth; nil when unprocessable
		reason string   // part of the error when unprocessable
	}{
		{
			name:   "valid",
			values: func() map[string]any { return entry(event("m1", "fourkingdoms", "a", "b", "c", "d")) },
			want:   []string{"a", "b", "c", "d"},
		},
		{
			name: "tie broken by turn order",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				for _, p := range ev.Result.Points {
					p.Points = 7
				}
				ev.Result.Ranking = []gamev1.Seat{gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_RED}
				return entry(ev)
			},
			want: []string{"d", "c", "b", "a"},
		},
		{
			name: "unknown type",
			values: func() map[string]any {
				return map[string]any{contract.TypeField(): "x.Other", contract.DataField(): ""}
			},
			reason: "type",
		},
		{
			name:   "no data",
			values: func() map[string]any { return map[string]any{contract.TypeField(): contract.Type()} },
			reason: "no data",
		},
		{
			name: "garbage data",
			values: func() map[string]any {
				return map[string]any{contract.TypeField(): contract.Type(), contract.DataField(): "\xff\xff\xff"}
			},
			reason: "decode",
		},
		{
			name: "ranking contradicts the tie-break",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				for _, p := range ev.Result.Points {
					p.Points = 7
				}
				return entry(ev)
			},
			reason: "contradicts",
		},
		{
			name: "aborted",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				ev.Result.Termination = gamev1.Termination_TERMINATION_ABORTED
				return entry(ev)
			},
			reason: "aborted",
		},
		{
			name: "no finish time",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				ev.FinishedAt = nil
				return entry(ev)
			},
			reason: "finished_at",
		},
		{
			name:   "three players",
			values: func() map[string]any { return entry(event("m1", "fourkingdoms", "a", "b", "c")) },
			reason: "3 players",
		},
		{
			name: "unspecified seat",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				ev.Players[2].Seat = gamev1.Seat_SEAT_UNSPECIFIED
				return entry(ev)
			},
			reason: "invalid seat",
		},
		{
			name: "missing points",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				ev.Result.Points = ev.Result.Points[:3]
				return entry(ev)
			},
			reason: "no points",
		},
		{
			name:   "no rule set",
			values: func() map[string]any { return entry(event("m1", "", "a", "b", "c", "d")) },
			reason: "rule set",
		},
		{
			name:   "no match id",
			values: func() map[string]any { return entry(event("", "fourkingdoms", "a", "b", "c", "d")) },
			reason: "match id",
		},
		{
			name: "no player",
			values: func() map[string]any {
				ev := event("m1", "fourkingdoms", "a", "b", "c", "d")
				ev.Players[1].Player = nil
				return entry(ev)
			},
			reason: "player id",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Decode(tt.values())
			if tt.want == nil {
				if !errors.Is(err, errUnprocessable) || !strings.Contains(err.Error(), tt.reason) {
					t.Fatalf("Decode error = %v, want unprocessable mentioning %q", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if res.MatchID != "m1" || res.Pool != "fourkingdoms" || !res.FinishedAt.Equal(finishedAt) {
				t.Errorf("result header = %q %q %v", res.MatchID, res.Pool, res.FinishedAt)
			}
			for i, p := range res.Places {
				if p.PlayerID != tt.want[i] || p.Name != strings.ToUpper(tt.want[i]) {
					t.Errorf("place %d = %+v, want %s", i+1, p, tt.want[i])
				}
			}
		})
	}
}

// FuzzDecode: arbitrary entries never panic, and whatever decodes is a
// valid result.
func FuzzDecode(f *testing.F) {
	valid, _ := proto.Marshal(event("m1", "fourkingdoms", "a", "b", "c", "d"))
	f.Add(valid)
	f.Add([]byte{})
	f.Add([]byte("\x0a\x02m1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Decode(map[string]any{contract.TypeField(): contract.Type(), contract.DataField(): string(data)})
		if err != nil {
			if !errors.Is(err, errUnprocessable) {
				t.Fatalf("error %v is not marked unprocessable", err)
			}
			return
		}
		ids := map[string]bool{}
		for i, p := range res.Places {
			ids[p.PlayerID] = true
			if i > 0 && !ladder.Ahead(res.Places[i-1], p) {
				t.Fatalf("decoded ranking is not strict: %+v", res.Places)
			}
		}
		if len(ids) != ladder.Seats {
			t.Fatalf("decoded %d distinct players", len(ids))
		}
	})
}
