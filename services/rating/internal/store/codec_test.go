package store

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/skill"
)

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	s := New(nil, ladder.DefaultPolicy(), Config{Prefix: "", Retention: DefaultRetention()})
	p := Player{ID: "x", Name: "Ann | the \"best\"", Bot: true, Known: true, Standing: ladder.Standing{
		Rating: skill.Rating{Mu: 27.795084971874736, Sigma: 8.263160757613477}, Games: 31, Version: 40,
		UpdatedAt: time.UnixMilli(1764583200123).UTC(),
	}, last: recordRef(20423, "m|2:3")}
	for _, p := range []Player{p, {ID: "x", Name: "", Known: true, last: recordRef(-1, "")}, {ID: "x", Name: "|", Known: true}} {
		got, err := s.decodePlayer("x", encodePlayer(p))
		if err != nil || got != p {
			t.Errorf("player round trip = %+v, %v; want %+v", got, err, p)
		}
	}
	for _, tt := range []struct {
		day   int64
		match string
	}{{20423, "m1"}, {0, ""}, {-5, "a:b|c"}, {1 << 40, "1:2:3"}} {
		day, match, err := parseRecordRef(recordRef(tt.day, tt.match))
		if err != nil || day != tt.day || match != tt.match {
			t.Errorf("reference round trip of %d, %q = %d, %q, %v", tt.day, tt.match, day, match, err)
		}
	}
	for _, bad := range []string{"", "5", "5:", "5:1", "5:2:a", "5:1:ab", "x:1:a", "5:-1:", "5:+1:a", ":1:a"} {
		if _, _, err := parseRecordRef(bad); err == nil {
			t.Errorf("parseRecordRef(%q) accepted", bad)
		}
	}
	var rec []byte
	for _, part := range []string{"ann", "", "entry a", "b:ob", recordRef(3, "m|0"), "entry b"} {
		rec = appendRecordPart(rec, part)
	}
	for _, tt := range []struct{ player, entry, prev string }{{"ann", "entry a", ""}, {"b:ob", "entry b", recordRef(3, "m|0")}} {
		entry, prev, err := recordEntry(string(rec), tt.player)
		if err != nil || entry != tt.entry || prev != tt.prev {
			t.Errorf("recordEntry(%s) = %q, %q, %v; want %q, %q", tt.player, entry, prev, err, tt.entry, tt.prev)
		}
	}
	if _, _, err := recordEntry(string(rec), "cat"); err == nil {
		t.Error("recordEntry found a player who is not in the record")
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
	s := New(nil, ladder.DefaultPolicy(), Config{Prefix: "", Retention: DefaultRetention()})
	f.Add("3|25.5|8.1|3|1764583200123|0|20423:2:m1|Ann")
	f.Add("3|25.5|8.1|3|1764583200123|0||Ann")
	f.Add("|||||||")
	f.Add("1|NaN|Inf|2|0|1|5:3:a|b|")
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
			again.Standing.Games != p.Standing.Games || again.Standing.Version != p.Standing.Version || again.Name != p.Name || again.Bot != p.Bot ||
			again.last != p.last {
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

// FuzzParseRecordRef: references never panic the parser, and whatever
// parses is rebuilt by recordRef into a reference that parses the same.
func FuzzParseRecordRef(f *testing.F) {
	f.Add("20423:2:m1")
	f.Add("-1:0:")
	f.Add("5:3:a|:")
	f.Fuzz(func(t *testing.T, ref string) {
		day, match, err := parseRecordRef(ref)
		if err != nil {
			return
		}
		d2, m2, err := parseRecordRef(recordRef(day, match))
		if err != nil || d2 != day || m2 != match {
			t.Fatalf("%q -> %d, %q -> %q -> %d, %q, %v", ref, day, match, recordRef(day, match), d2, m2, err)
		}
	})
}

// FuzzRecordEntry: stored records never panic the reader, and a record
// built from parts gives every player's parts back.
func FuzzRecordEntry(f *testing.F) {
	f.Add("3:ann0:7:entry a", "ann", "x", "y")
	f.Add("", "", "", "")
	f.Add("9999999999:a", "a", "b:c", "d|e")
	f.Fuzz(func(t *testing.T, raw, player, prev, entry string) {
		_, _, _ = recordEntry(raw, player)
		rec := appendRecordPart(appendRecordPart(appendRecordPart(nil, "other"), ""), "x")
		rec = appendRecordPart(appendRecordPart(appendRecordPart(rec, player), prev), entry)
		if player == "other" {
			return // the record's first player is found first
		}
		e, p, err := recordEntry(string(rec), player)
		if err != nil || e != entry || p != prev {
			t.Fatalf("recordEntry(%q) = %q, %q, %v; want %q, %q", player, e, p, err, entry, prev)
		}
	})
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// recordEntry finds player's part of a history record, as history.lua
// does: their entry and the reference of their previous record.
func recordEntry(record, player string) (entry, prev string, err error) {
	for rest := record; rest != ""; {
		var parts [3]string
		for i := range parts {
			c := strings.IndexByte(rest, ':')
			if c <= 0 {
				return "", "", errors.New("corrupt history record")
			}
			n, err := strconv.Atoi(rest[:c])
			if err != nil || n < 0 || rest[0] == '+' || n > len(rest)-c-1 {
				return "", "", errors.New("corrupt history record")
			}
			parts[i], rest = rest[c+1:c+1+n], rest[c+1+n:]
		}
		if parts[0] == player {
			return parts[2], parts[1], nil
		}
	}
	return "", "", fmt.Errorf("history record has no entry of player %s", player)
}
