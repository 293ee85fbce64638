package api

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
)

// sampleEvent is an encoded MoveApplied of a typical size.
func sampleEvent(tb testing.TB) []byte {
	tb.Helper()
	ev := &eventsv1.MatchEvent{MatchId: "m-0123456789abcdef", Version: 42, Ply: 41,
		Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
			ToMove: gamev1.Seat_SEAT_YELLOW,
			Effects: &gamev1.MoveEffects{Move: "Nj1-i3", Seat: gamev1.Seat_SEAT_BLUE,
				From: &gamev1.Square{Name: "j1", File: 10, Rank: 1}, To: &gamev1.Square{Name: "i3", File: 9, Rank: 3},
				Piece: gamev1.PieceKind(2)},
		}}}
	b, err := proto.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkWatchEventSend measures what a watched match's streams cost per
// event in this package and the codec: an op is one event sent to four
// streams, one of them with its legal moves (the seat to move), each
// response marshalled as gRPC's proto codec does. "shared" is
// watchResponse (one encoding per event, copied per stream); "per-stream"
// builds a response with the event as a message for every stream and
// marshals it, as WatchMatch did before (the reference, kept here only).
//
//	go test ./internal/api -run '^$' -bench WatchEventSend -count 6 | benchstat -col /enc -
func BenchmarkWatchEventSend(b *testing.B) {
	raw := sampleEvent(b)
	legal := []string{"d2-d3", "d2-d4", "e2-e3", "e2-e4", "Nj1-i3", "Nj1-k3", "g1-f2"}
	items := func() [4]match.WatchItem {
		var its [4]match.WatchItem
		for i := range its {
			its[i] = match.WatchItem{Version: 42, Event: raw}
		}
		its[2].LegalMoves = legal
		return its
	}
	b.Run("enc=shared", func(b *testing.B) {
		b.ReportAllocs()
		its := items()
		for b.Loop() {
			// One encoding per event, as the hub's shared frame gives it.
			shared := eventFrame(42, raw)
			for _, it := range its {
				resp := eventResponse(shared, it.LegalMoves)
				if _, err := proto.Marshal(resp); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("enc=per-stream", func(b *testing.B) {
		b.ReportAllocs()
		its := items()
		for b.Loop() {
			for _, it := range its {
				resp := &matchv1.WatchMatchResponse{Version: it.Version, LegalMoves: it.LegalMoves}
				ev := &eventsv1.MatchEvent{}
				ev.ProtoReflect().SetUnknown(protoreflect.RawFields(it.Event))
				resp.Item = &matchv1.WatchMatchResponse_Event{Event: ev}
				if _, err := proto.Marshal(resp); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
