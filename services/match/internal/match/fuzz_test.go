package match

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

func FuzzRecordUnmarshal(f *testing.F) {
	f.Add((&record{Status: StatusActive}).marshal())
	f.Add([]byte{1})
	withQueues := record{Status: StatusActive, LastMove: []byte{1, 2}}
	withQueues.Premoves[1] = Premoves{Moves: []string{"m4-l4"}, Change: PremoveSet, Version: 9}
	f.Add(withQueues.marshal())
	withLag := withQueues
	withLag.Clocks.LagTracked[2], withLag.Clocks.LagQuota[2] = true, 1800*time.Millisecond
	f.Add(withLag.marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		var r record
		if err := r.unmarshal(b); err != nil {
			return
		}
		var again record
		if err := again.unmarshal(r.marshal()); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}

func FuzzDecodeStoredReply(f *testing.F) {
	f.Add([]byte("h2-h3\x00"), "h2-h3")
	f.Fuzz(func(t *testing.T, b []byte, move string) {
		_, _ = decodeStoredReply(b, move) // must not panic
	})
}

func FuzzDecodeNotice(f *testing.F) {
	f.Add(encodeNotice(&Premoves{Seat: 2, Moves: []string{"d13-d12", "O-O"}, Change: PremovePlayed, Version: 12, Move: "e13-e12"}))
	f.Add([]byte{3, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeNotice(b)
		if err != nil {
			return
		}
		again, err := decodeNotice(encodeNotice(&p))
		if err != nil || again.Seat != p.Seat || again.Change != p.Change || again.Version != p.Version || again.Move != p.Move || len(again.Moves) != len(p.Moves) {
			t.Fatalf("re-encoded notice %+v decodes to %+v, %v", p, again, err)
		}
	})
}

// FuzzThinkTime: a claimed think time is refused when negative or not a
// valid duration, otherwise read as a duration from 0 to maxThinkTime.
func FuzzThinkTime(f *testing.F) {
	f.Add(int64(0), int32(150_000_000))
	f.Add(int64(-1), int32(0))
	f.Add(int64(1), int32(-5))
	f.Add(int64(315_576_000_000), int32(999_999_999))
	f.Fuzz(func(t *testing.T, sec int64, nanos int32) {
		d := &durationpb.Duration{Seconds: sec, Nanos: nanos}
		got, measured, err := thinkTime(&matchv1.MakeMoveRequest{ClientThinkTime: d})
		bad := d.CheckValid() != nil || sec < 0 || nanos < 0
		if (err != nil) != bad {
			t.Fatalf("%v: error %v, want one: %v", d, err, bad)
		}
		if err == nil && (!measured || got < 0 || got > maxThinkTime) {
			t.Fatalf("%v: read as %v (measured %v)", d, got, measured)
		}
	})
}
