package eventstream_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func finished(id string) *eventsv1.MatchFinished {
	return &eventsv1.MatchFinished{
		MatchId: id,
		RuleSet: "fourkingdoms",
		Players: []*gamev1.SeatPlayer{{Seat: gamev1.Seat_SEAT_RED, Player: &gamev1.Player{PlayerId: "p1", DisplayName: "P1"}}},
		Result: &gamev1.Result{
			Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING,
			Points:      []*gamev1.SeatPoints{{Seat: gamev1.Seat_SEAT_RED, Points: 40}},
			Ranking:     []gamev1.Seat{gamev1.Seat_SEAT_RED},
		},
		FinishedAt: timestamppb.New(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)),
		Plies:      120,
	}
}

// TestMatchFinishedWireNames pins the names running deployments share: the
// match service of one release writes what the rating service of another
// reads, so changing any of them needs a migration, not just an edit of the
// proto option.
func TestMatchFinishedWireNames(t *testing.T) {
	t.Parallel()
	s := eventstream.MatchFinished()
	for _, tt := range []struct{ name, got, want string }{
		{"key", s.Key(), "fk:events:match-finished"},
		{"type field", s.TypeField(), "type"},
		{"data field", s.DataField(), "data"},
		{"type", s.Type(), "fourkingdoms.events.v1.MatchFinished"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestPlayerLinkedWireNames pins the link stream's names: matchmaking
// publishes and rating consumes them, possibly of different releases.
func TestPlayerLinkedWireNames(t *testing.T) {
	t.Parallel()
	s := eventstream.PlayerLinked()
	for _, tt := range []struct{ name, got, want string }{
		{"key", s.Key(), "fk:events:player-linked"},
		{"type field", s.TypeField(), "type"},
		{"data field", s.DataField(), "data"},
		{"type", s.Type(), "fourkingdoms.events.v1.PlayerLinked"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestMatchAbandonedWireNames pins the abandoned stream's names: the match
// service publishes and matchmaking consumes them, possibly of different
// releases.
func TestMatchAbandonedWireNames(t *testing.T) {
	t.Parallel()
	s := eventstream.MatchAbandoned()
	for _, tt := range []struct{ name, got, want string }{
		{"key", s.Key(), "fk:events:match-abandoned"},
		{"type field", s.TypeField(), "type"},
		{"data field", s.DataField(), "data"},
		{"type", s.Type(), "fourkingdoms.events.v1.MatchAbandoned"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestForNeedsTheOption(t *testing.T) {
	t.Parallel()
	if _, err := eventstream.For[*eventsv1.MatchEvent](); err == nil || !strings.Contains(err.Error(), "no stream option") {
		t.Errorf("For[MatchEvent] error = %v, want no stream option", err)
	}
	s, err := eventstream.For[*eventsv1.MatchFinished]()
	if err != nil || s != eventstream.MatchFinished() {
		t.Errorf("For[MatchFinished] = %+v, %v; want MatchFinished()", s, err)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	s := eventstream.MatchFinished()
	data, err := proto.Marshal(finished("m1"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		values map[string]any
		reason string // part of the error; "" when valid
	}{
		{"as Redis returns it", map[string]any{"type": s.Type(), "data": string(data)}, ""},
		{"data as bytes", map[string]any{"type": s.Type(), "data": data}, ""},
		{"other fields ignored", map[string]any{"type": s.Type(), "data": string(data), "dead_reason": "x"}, ""},
		{"other type", map[string]any{"type": "fourkingdoms.events.v1.MatchEvent", "data": string(data)}, `type "fourkingdoms.events.v1.MatchEvent"`},
		{"no type", map[string]any{"data": string(data)}, `type ""`},
		{"type not a string", map[string]any{"type": 7, "data": string(data)}, `type ""`},
		{"no data", map[string]any{"type": s.Type()}, "no data field"},
		{"data not a string", map[string]any{"type": s.Type(), "data": 7}, "no data field"},
		{"garbage data", map[string]any{"type": s.Type(), "data": "\xff\xff\xff"}, "decode fourkingdoms.events.v1.MatchFinished"},
		{"empty entry", map[string]any{}, "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Decode(tt.values)
			if tt.reason == "" {
				if err != nil || !proto.Equal(got, finished("m1")) {
					t.Fatalf("Decode = %v, %v; want the message", got, err)
				}
				return
			}
			if !errors.Is(err, eventstream.ErrMalformed) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Decode error = %v, want ErrMalformed with %q", err, tt.reason)
			}
			if got != nil {
				t.Errorf("Decode returned %v with the error", got)
			}
		})
	}
}

// TestEncodeDecodeThroughRedis writes entries as a producer does and reads
// them back as a consumer does, through a real stream.
func TestEncodeDecodeThroughRedis(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := k.Client(t)
			s := eventstream.MatchFinished()
			key := prefix + s.Key()
			want := []*eventsv1.MatchFinished{finished("m1"), finished("m2"), {MatchId: "m3"}}
			for _, m := range want {
				values, err := s.Encode(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: key, Values: values}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			msgs, err := rdb.XRange(t.Context(), key, "-", "+").Result()
			if err != nil || len(msgs) != len(want) {
				t.Fatalf("XRANGE = %d entries, %v; want %d", len(msgs), err, len(want))
			}
			for i, msg := range msgs {
				if len(msg.Values) != 2 {
					t.Errorf("entry %d has fields %v, want exactly type and data", i, msg.Values)
				}
				got, err := s.Decode(msg.Values)
				if err != nil || !proto.Equal(got, want[i]) {
					t.Errorf("entry %d decodes to %v, %v; want %v", i, got, err, want[i])
				}
			}
		})
	}
}
