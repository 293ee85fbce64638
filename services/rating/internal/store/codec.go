package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A player's standing is stored as one string,
//
//	version|mu|sigma|games|updated unix ms|bot 0/1|last record|display name
//
// so that the apply script compares and replaces it with one command each.
// Floats use the shortest exact representation: they read back bit for bit.
// The last record is the reference (recordRef) of the player's newest
// history record, "" before the first game.
func encodePlayer(p Player) string {
	return string(appendPlayer(make([]byte, 0, 64+len(p.Name)), p))
}

// appendPlayer appends the encoding of p to b.
func appendPlayer(b []byte, p Player) []byte {
	st := p.Standing
	b = strconv.AppendInt(b, st.Version, 10)
	b = append(b, '|')
	b = strconv.AppendFloat(b, st.Rating.Mu, 'g', -1, 64)
	b = append(b, '|')
	b = strconv.AppendFloat(b, st.Rating.Sigma, 'g', -1, 64)
	b = append(b, '|')
	b = strconv.AppendInt(b, st.Games, 10)
	b = append(b, '|')
	var ms int64
	if !st.UpdatedAt.IsZero() {
		ms = st.UpdatedAt.UnixMilli()
	}
	b = strconv.AppendInt(b, ms, 10)
	if p.Bot {
		b = append(b, "|1|"...)
	} else {
		b = append(b, "|0|"...)
	}
	b = append(b, p.last...)
	b = append(b, '|')
	return append(b, p.Name...)
}

// decodePlayer decodes a stored standing; "" means never rated.
func (s *Store) decodePlayer(id, raw string) (Player, error) {
	p := Player{ID: id, Standing: s.policy.New()}
	if raw == "" {
		return p, nil
	}
	// Cut by hand: strings.SplitN would allocate for every standing read.
	var f [7]string
	rest := raw
	for i := range 6 {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, "|"); !ok {
			return p, fmt.Errorf("read player %s: corrupt standing %q", id, raw)
		}
	}
	f[6] = rest
	var errs [5]error
	p.Standing.Version, errs[0] = strconv.ParseInt(f[0], 10, 64)
	p.Standing.Rating.Mu, errs[1] = strconv.ParseFloat(f[1], 64)
	p.Standing.Rating.Sigma, errs[2] = strconv.ParseFloat(f[2], 64)
	p.Standing.Games, errs[3] = strconv.ParseInt(f[3], 10, 64)
	ms, err := strconv.ParseInt(f[4], 10, 64)
	errs[4] = err
	if err := errors.Join(errs[:]...); err != nil {
		return p, fmt.Errorf("read player %s: corrupt standing %q: %w", id, raw, err)
	}
	if ms != 0 {
		p.Standing.UpdatedAt = time.UnixMilli(ms).UTC()
	}
	p.Bot = f[5] == "1"
	// The reference may contain '|' (in the match id): it is read by its
	// own lengths, and the name is the rest.
	rest = f[6]
	if !strings.HasPrefix(rest, "|") {
		_, _, n, err := readRecordRef(rest)
		if err != nil || n == len(rest) || rest[n] != '|' {
			return p, fmt.Errorf("read player %s: corrupt standing %q: bad last record", id, raw)
		}
		p.last, rest = rest[:n], rest[n:]
	}
	p.Name = rest[1:]
	p.Known = true
	return p, nil
}

// recordRef names a match's history record, the field match of the day
// bucket: "<day>:<len(match)>:<match>". Match ids may hold any byte, so
// the id is read by its length.
func recordRef(day int64, match string) string {
	b := strconv.AppendInt(make([]byte, 0, 24+len(match)), day, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(len(match)), 10)
	b = append(b, ':')
	return string(append(b, match...))
}

var errBadRef = errors.New("malformed history record reference")

// readRecordRef reads a recordRef at the start of s and returns its day,
// match id and length.
func readRecordRef(s string) (day int64, match string, n int, err error) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return 0, "", 0, errBadRef
	}
	if day, err = strconv.ParseInt(s[:i], 10, 64); err != nil {
		return 0, "", 0, errBadRef
	}
	j := strings.IndexByte(s[i+1:], ':')
	if j <= 0 {
		return 0, "", 0, errBadRef
	}
	size, err := strconv.Atoi(s[i+1 : i+1+j])
	if err != nil || size < 0 || s[i+1] == '+' || size > len(s)-(i+j+2) {
		return 0, "", 0, errBadRef
	}
	start := i + j + 2
	return day, s[start : start+size], start + size, nil
}

// parseRecordRef parses s, which must be exactly one recordRef.
func parseRecordRef(s string) (day int64, match string, err error) {
	day, match, n, err := readRecordRef(s)
	if err == nil && n != len(s) {
		err = errBadRef
	}
	return day, match, err
}

// A match's history record holds its four players' entries, each as three
// length-prefixed strings "<len>:<bytes>": the player id, the reference of
// the player's previous record ("" for their first game) and the entry.
// The history read script walks a player's records through the previous
// references.
func appendRecordPart(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// A history entry is stored as one string,
//
//	game|place|finished unix ms|display before|display after|mu|sigma|match id
//
// (the match id last: it may contain '|').
func encodeHistory(e HistoryEntry) string {
	return string(appendHistory(make([]byte, 0, 80+len(e.MatchID)), e))
}

// appendHistory appends the encoding of e to b.
func appendHistory(b []byte, e HistoryEntry) []byte {
	b = strconv.AppendInt(b, e.Game, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(e.Place), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, e.FinishedAt.UnixMilli(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(e.DisplayBefore), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(e.DisplayAfter), 10)
	b = append(b, '|')
	b = strconv.AppendFloat(b, e.Mu, 'g', -1, 64)
	b = append(b, '|')
	b = strconv.AppendFloat(b, e.Sigma, 'g', -1, 64)
	b = append(b, '|')
	return append(b, e.MatchID...)
}

func decodeHistory(raw string) (HistoryEntry, error) {
	var e HistoryEntry
	f := strings.SplitN(raw, "|", 8)
	if len(f) != 8 {
		return e, fmt.Errorf("corrupt history entry %q", raw)
	}
	var errs [7]error
	var place, before, after, ms int64
	e.Game, errs[0] = strconv.ParseInt(f[0], 10, 64)
	place, errs[1] = strconv.ParseInt(f[1], 10, 32)
	ms, errs[2] = strconv.ParseInt(f[2], 10, 64)
	before, errs[3] = strconv.ParseInt(f[3], 10, 32)
	after, errs[4] = strconv.ParseInt(f[4], 10, 32)
	e.Mu, errs[5] = strconv.ParseFloat(f[5], 64)
	e.Sigma, errs[6] = strconv.ParseFloat(f[6], 64)
	if err := errors.Join(errs[:]...); err != nil {
		return e, fmt.Errorf("corrupt history entry %q: %w", raw, err)
	}
	e.Place, e.DisplayBefore, e.DisplayAfter = int(place), int(before), int(after)
	e.FinishedAt = time.UnixMilli(ms).UTC()
	e.MatchID = f[7]
	return e, nil
}
