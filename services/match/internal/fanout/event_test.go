package fanout

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// TestKindsAreTheOneof: isKind accepts exactly the event oneof's members,
// so a member added to the proto fails here until ReadEvent knows it.
func TestKindsAreTheOneof(t *testing.T) {
	fields := (&eventsv1.MatchEvent{}).ProtoReflect().Descriptor().Oneofs().ByName("event").Fields()
	members := map[protowire.Number]bool{}
	for i := range fields.Len() {
		members[fields.Get(i).Number()] = true
	}
	for num := protowire.Number(1); num < 100; num++ {
		if isKind(num) != members[num] {
			t.Errorf("isKind(%d) = %v, but the oneof member set says %v", num, isKind(num), members[num])
		}
	}
	for _, k := range []protowire.Number{KindMoveApplied, KindGameOver, KindMatchAborted} {
		if !members[k] {
			t.Errorf("kind %d is not a member of the oneof", k)
		}
	}
}

func encode(t testing.TB, ev *eventsv1.MatchEvent) []byte {
	b, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadEvent(t *testing.T) {
	move := &eventsv1.MatchEvent{MatchId: "m", Version: 7, Ply: 3, OccurredAt: timestamppb.Now(),
		Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
			ToMove: gamev1.Seat_SEAT_YELLOW,
			Clocks: []*gamev1.Clock{{Seat: gamev1.Seat_SEAT_RED}}}}}
	over := &eventsv1.MatchEvent{Version: 9, Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{}}}
	aborted := &eventsv1.MatchEvent{Version: 10, Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{}}}
	resigned := &eventsv1.MatchEvent{Version: 8, Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{Seat: gamev1.Seat_SEAT_BLUE}}}
	moveTo := func(seat gamev1.Seat) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, KindMoveApplied, protowire.BytesType),
			protowire.AppendVarint(protowire.AppendTag(nil, fieldMoveToMove, protowire.VarintType), uint64(seat)))
	}
	tests := []struct {
		name   string
		raw    []byte
		want   Event
		final  bool
		reject bool
	}{
		{name: "move", raw: encode(t, move), want: Event{Version: 7, Ply: 3, Kind: KindMoveApplied, ToMove: gamev1.Seat_SEAT_YELLOW}},
		{name: "game over", raw: encode(t, over), want: Event{Version: 9, Kind: KindGameOver}, final: true},
		{name: "aborted", raw: encode(t, aborted), want: Event{Version: 10, Kind: KindMatchAborted}, final: true},
		{name: "resigned", raw: encode(t, resigned), want: Event{Version: 8, Kind: 12}},
		{name: "no event", raw: encode(t, &eventsv1.MatchEvent{Version: 1}), want: Event{Version: 1}},
		{name: "empty", raw: nil, want: Event{}},
		{name: "last version wins", raw: append(encode(t, move), encode(t, &eventsv1.MatchEvent{Version: 12})...),
			want: Event{Version: 12, Ply: 3, Kind: KindMoveApplied, ToMove: gamev1.Seat_SEAT_YELLOW}},
		{name: "moves merge", raw: append(encode(t, move), moveTo(gamev1.Seat_SEAT_GREEN)...),
			want: Event{Version: 7, Ply: 3, Kind: KindMoveApplied, ToMove: gamev1.Seat_SEAT_GREEN}},
		{name: "last oneof member wins", raw: append(encode(t, move), encode(t, over)...),
			want: Event{Version: 9, Ply: 3, Kind: KindGameOver}, final: true},
		{name: "member switch resets the move", raw: append(append(encode(t, move), encode(t, resigned)...),
			protowire.AppendBytes(protowire.AppendTag(nil, KindMoveApplied, protowire.BytesType), nil)...),
			want: Event{Version: 8, Ply: 3, Kind: KindMoveApplied}},
		{name: "version of the wrong wire type is unknown", raw: protowire.AppendString(protowire.AppendTag(nil, fieldVersion, protowire.BytesType), "x"),
			want: Event{}},
		{name: "truncated tag", raw: []byte{0x80}, reject: true},
		{name: "truncated version", raw: []byte{0x10, 0x80}, reject: true},
		{name: "truncated ply", raw: []byte{0x18, 0x80}, reject: true},
		{name: "truncated member", raw: []byte{0x5a, 0x05, 0x10}, reject: true},
		{name: "truncated to_move", raw: []byte{0x5a, 0x02, 0x10, 0x80}, reject: true},
		{name: "field number zero", raw: []byte{0x00, 0x01}, reject: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadEvent(tt.raw)
			if tt.reject {
				if err == nil {
					t.Fatalf("ReadEvent(%x) = %+v, want an error", tt.raw, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadEvent: %v", err)
			}
			tt.want.Raw = tt.raw
			if got.Version != tt.want.Version || got.Ply != tt.want.Ply || got.Kind != tt.want.Kind || got.ToMove != tt.want.ToMove || len(got.Raw) != len(tt.raw) {
				t.Errorf("ReadEvent = %+v, want %+v", got, tt.want)
			}
			if got.Final() != tt.final {
				t.Errorf("Final() = %v, want %v", got.Final(), tt.final)
			}
			checkAgainstProto(t, tt.raw, got)
		})
	}
}

// checkAgainstProto: wherever proto.Unmarshal accepts raw, ReadEvent read
// the same version, oneof member and seat to move.
func checkAgainstProto(t *testing.T, raw []byte, got Event) {
	t.Helper()
	var m eventsv1.MatchEvent
	if proto.Unmarshal(raw, &m) != nil {
		return
	}
	var kind protowire.Number
	if od := m.ProtoReflect().WhichOneof(m.ProtoReflect().Descriptor().Oneofs().ByName("event")); od != nil {
		kind = od.Number()
	}
	if got.Version != m.GetVersion() || got.Ply != m.GetPly() || got.Kind != kind || got.ToMove != m.GetMoveApplied().GetToMove() {
		t.Errorf("ReadEvent = version %d, ply %d, kind %d, to move %v; proto.Unmarshal = %d, %d, %d, %v",
			got.Version, got.Ply, got.Kind, got.ToMove, m.GetVersion(), m.GetPly(), kind, m.GetMoveApplied().GetToMove())
	}
}

func FuzzReadEvent(f *testing.F) {
	f.Add(encode(f, &eventsv1.MatchEvent{Version: 7, Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{ToMove: gamev1.Seat_SEAT_BLUE}}}))
	f.Add(encode(f, &eventsv1.MatchEvent{Version: 9, Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{}}}))
	f.Add([]byte{0x5a, 0x02, 0x10, 0x03, 0x7a, 0x00, 0x5a, 0x00})
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ReadEvent(raw)
		var m eventsv1.MatchEvent
		if perr := proto.Unmarshal(raw, &m); perr == nil && err != nil {
			t.Fatalf("proto.Unmarshal accepts %x, ReadEvent: %v", raw, err)
		}
		if err == nil {
			checkAgainstProto(t, raw, got)
		}
	})
}
