package api

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
)

// TestEventFrame: an event item's response, built from the shared
// encoding plus the stream's legal moves, decodes to the response built
// field by field, and leaves the shared bytes as they were.
func TestEventFrame(t *testing.T) {
	t.Parallel()
	raw := sampleEvent(t)
	var ev eventsv1.MatchEvent
	if err := proto.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		version uint64
		legal   []string
	}{
		{"no legal moves", 42, nil},
		{"legal moves", 42, []string{"d2-d3", "Nj1-i3"}},
		{"large version", 1 << 40, []string{"d2-d3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shared := eventFrame(tc.version, raw)
			// Spare capacity: a stream that appended its legal moves
			// to the shared bytes would write into it.
			shared = append(make([]byte, 0, len(shared)+64), shared...)
			before := bytes.Clone(shared)
			resp := eventResponse(shared, tc.legal)
			b, err := proto.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			var got matchv1.WatchMatchResponse
			if err := proto.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := &matchv1.WatchMatchResponse{Version: tc.version, LegalMoves: tc.legal,
				Item: &matchv1.WatchMatchResponse_Event{Event: &ev}}
			if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded response (-want +got):\n%s", diff)
			}
			spare := shared[len(shared):cap(shared)]
			if !bytes.Equal(shared, before) || bytes.ContainsFunc(spare, func(r rune) bool { return r != 0 }) {
				t.Errorf("the shared bytes or the capacity after them changed")
			}
			// The same through a WatchItem (an event read for one
			// stream: its encoding is built for it).
			it := match.WatchItem{Version: tc.version, Event: raw, LegalMoves: tc.legal}
			if b2, _ := proto.Marshal(watchResponse(it)); !bytes.Equal(b2, b) {
				t.Errorf("watchResponse encodes %x, want %x", b2, b)
			}
		})
	}
}
