package match

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestStoredReply checks that encodeReply writes exactly what marshalling
// the MakeMoveResponse wrote before it (so stored answers stay readable
// both ways) and that decodeStoredReply gives the outcome back.
func TestStoredReply(t *testing.T) {
	t.Parallel()
	ev := func(v uint64) *eventsv1.MatchEvent {
		return &eventsv1.MatchEvent{MatchId: "m", Version: v, Ply: uint32(v), Event: &eventsv1.MatchEvent_MoveApplied{
			MoveApplied: &eventsv1.MoveApplied{ToMove: gamev1.Seat_SEAT_BLUE}}}
	}
	result := &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING,
		Ranking: []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_GREEN}}
	tests := []struct {
		name string
		out  Outcome
		resp *matchv1.MakeMoveResponse
	}{
		{"move", Outcome{Events: []*eventsv1.MatchEvent{ev(2)}, Version: 2, Ply: 1, ToMove: rules.Blue},
			&matchv1.MakeMoveResponse{Events: []*eventsv1.MatchEvent{ev(2)}, Version: 2, Ply: 1, ToMove: gamev1.Seat_SEAT_BLUE}},
		{"red to move", Outcome{Events: []*eventsv1.MatchEvent{ev(5), ev(6)}, Version: 6, Ply: 4, ToMove: rules.Red},
			&matchv1.MakeMoveResponse{Events: []*eventsv1.MatchEvent{ev(5), ev(6)}, Version: 6, Ply: 4, ToMove: gamev1.Seat_SEAT_RED}},
		{"game over", Outcome{Events: []*eventsv1.MatchEvent{ev(9)}, Version: 9, Ply: 300, Over: true, Result: result},
			&matchv1.MakeMoveResponse{Events: []*eventsv1.MatchEvent{ev(9)}, Version: 9, Ply: 300, GameOver: true, Result: result}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var encoded [][]byte
			for _, e := range tt.out.Events {
				b, err := marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				encoded = append(encoded, b)
			}
			got, err := encodeReply("h2-h3", &tt.out, encoded)
			if err != nil {
				t.Fatal(err)
			}
			// What the service stored before: the response without its
			// events, marshalled, then the encoded events.
			noEvents := proto.Clone(tt.resp).(*matchv1.MakeMoveResponse)
			noEvents.Events = nil
			old, err := marshal(noEvents)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]byte("h2-h3\x00"), old...)
			evs, err := marshal(&matchv1.MakeMoveResponse{Events: tt.resp.Events})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, evs...)
			if !bytes.Equal(got, want) {
				t.Fatalf("encodeReply = %x, want %x", got, want)
			}
			back, err := decodeStoredReply(got, "h2-h3")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.out, back, protocmp.Transform()); diff != "" {
				t.Fatalf("decodeStoredReply (-want +got):\n%s", diff)
			}
			if _, err := decodeStoredReply(got, "h2-h4"); !errors.Is(err, ErrMoveIDReused) {
				t.Fatalf("another move's answer: %v, want ErrMoveIDReused", err)
			}
		})
	}
}
