package store

import (
	"math"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/skill"
)

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	s := New(nil, ladder.DefaultPolicy(), "", DefaultMarkerRetention)
	p := Player{ID: "x", Name: "Ann | the \"best\"", Bot: true, Known: true, Standing: ladder.Standing{
		Rating: skill.Rating{Mu: 27.795084971874736, Sigma: 8.263160757613477}, Games: 31, Version: 40,
		UpdatedAt: time.UnixMilli(1764583200123).UTC(),
	}}
	got, err := s.decodePlayer("x", encodePlayer(p))
	if err != nil || got != p {
		t.Errorf("player round trip = %+v, %v; want %+v", got, err, p)
	}
	h := HistoryEntry{MatchID: "m|1", FinishedAt: time.UnixMilli(1764583200123).UTC(), Place: 3, Game: 7,
		DisplayBefore: 1500, DisplayAfter: 1488, Mu: math.Nextafter(25, 26), Sigma: 1.0 / 3}
	gh, err := decodeHistory(encodeHistory(h))
	if err != nil || gh != h {
		t.Errorf("history round trip = %+v, %v; want %+v", gh, err, h)
	}
}

// FuzzDecodePlayer: stored values never panic the decoder, and whatever
// decodes encodes back to a value that decodes the same.
func FuzzDecodePlayer(f *testing.F) {
	s := New(nil, ladder.DefaultPolicy(), "", DefaultMarkerRetention)
	f.Add("3|25.5|8.1|3|1764583200123|0|Ann")
	f.Add("||||||")
	f.Add("1|NaN|Inf|2|0|1|")
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := s.decodePlayer("x", raw)
		if err != nil || raw == "" {
			return
		}
		again, err := s.decodePlayer("x", encodePlayer(p))
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", encodePlayer(p), err)
		}
		if !sameFloat(again.Standing.Rating.Mu, p.Standing.Rating.Mu) || !sameFloat(again.Standing.Rating.Sigma, p.Standing.Rating.Sigma) ||
			again.Standing.Games != p.Standing.Games || again.Standing.Version != p.Standing.Version || again.Name != p.Name || again.Bot != p.Bot {
			t.Fatalf("round trip changed %+v into %+v", p, again)
		}
	})
}

// FuzzDecodeHistory: stored entries never panic the decoder and re-encode
// to the same entry.
func FuzzDecodeHistory(f *testing.F) {
	f.Add("7|3|1764583200123|1500|1488|25.1|3.2|m|1")
	f.Add("|||||||")
	f.Fuzz(func(t *testing.T, raw string) {
		e, err := decodeHistory(raw)
		if err != nil {
			return
		}
		again, err := decodeHistory(encodeHistory(e))
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if again.MatchID != e.MatchID || again.Game != e.Game || again.Place != e.Place || !again.FinishedAt.Equal(e.FinishedAt) ||
			again.DisplayBefore != e.DisplayBefore || again.DisplayAfter != e.DisplayAfter ||
			!sameFloat(again.Mu, e.Mu) || !sameFloat(again.Sigma, e.Sigma) {
			t.Fatalf("round trip changed %+v into %+v", e, again)
		}
	})
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
