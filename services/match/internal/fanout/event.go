package fanout

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// Event is one encoded fourkingdoms.events.v1.MatchEvent and the fields a
// watcher acts on, read from the encoding without decoding the rest. A
// watcher passes the encoding on to its client as it is: decoding an event
// once and encoding it again for every watcher cost more than everything
// else a watcher does with it.
type Event struct {
	// Raw is the encoding, as stored; it is shared, so never modified.
	Raw []byte
	// Version is MatchEvent.version.
	Version uint64
	// Kind is the field number of the event oneof's member (0 if none).
	Kind protowire.Number
	// ToMove is MoveApplied.to_move when Kind is KindMoveApplied.
	ToMove gamev1.Seat
	// Ply is MatchEvent.ply: the plies played after the event. A watcher
	// that sees a match some plies behind (spectator delay) holds events
	// back by it.
	Ply uint32
	// frame caches the encoding a transport derives from a live event
	// (Frame); nil for an event read for one watcher only.
	frame *frame
}

// frame is the shared slot of Event.Frame: the first watcher that asks
// builds the encoding, the others read it.
type frame struct {
	mu sync.Mutex // held while building
	b  atomic.Pointer[[]byte]
}

// Frame returns build(Version, Raw): for a live event (one the hub
// delivered) it is built once, by the first watcher that asks, and shared
// by every watcher of the match on this instance, so a transport encodes
// an event once per event instead of once per stream; for an event read
// from the store for one watcher it is built for that watcher. The result
// is shared: never modify it, nor append to it. Its bytes must depend on
// the event alone; whatever differs between watchers (a player's legal
// moves, a seat's premove notice) must be added by each watcher in a
// buffer of its own. Every caller must pass the same build (there is one
// transport).
func (e Event) Frame(build func(version uint64, raw []byte) []byte) []byte {
	f := e.frame
	if f == nil {
		return build(e.Version, e.Raw)
	}
	if b := f.b.Load(); b != nil {
		return *b
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.b.Load(); b != nil {
		return *b
	}
	b := build(e.Version, e.Raw)
	f.b.Store(&b)
	return b
}

// Field numbers of fourkingdoms.events.v1.MatchEvent that ReadEvent reads.
const (
	fieldVersion                      = 2
	fieldPly                          = 3
	KindMoveApplied  protowire.Number = 11
	KindGameOver     protowire.Number = 15
	KindMatchAborted protowire.Number = 16
	fieldMoveToMove                   = 2 // MoveApplied.to_move
)

// isKind reports whether num is a member of MatchEvent's event oneof
// (TestKindsAreTheOneof keeps this in step with the proto).
func isKind(num protowire.Number) bool { return num >= 10 && num <= 20 }

// Final reports whether the event ends the match's history.
func (e Event) Final() bool { return e.Kind == KindGameOver || e.Kind == KindMatchAborted }

var errBadEvent = errors.New("malformed match event")

// ReadEvent reads an encoded MatchEvent's version, ply, event kind and, for
// a MoveApplied, the seat to move, with proto's rules for repeated fields: the
// last value of a scalar wins, a oneof holds its last member, and repeated
// occurrences of the same message member merge. It checks the encoding's
// structure, not the contents it skips (a string's UTF-8, for example).
func ReadEvent(raw []byte) (Event, error) {
	e := Event{Raw: raw}
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return Event{}, fmt.Errorf("%w: %v", errBadEvent, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == fieldVersion && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Event{}, fmt.Errorf("%w: version: %v", errBadEvent, protowire.ParseError(n))
			}
			e.Version, b = v, b[n:]
			continue
		case num == fieldPly && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Event{}, fmt.Errorf("%w: ply: %v", errBadEvent, protowire.ParseError(n))
			}
			e.Ply, b = uint32(v), b[n:]
			continue
		case isKind(num) && typ == protowire.BytesType:
			msg, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return Event{}, fmt.Errorf("%w: event %d: %v", errBadEvent, num, protowire.ParseError(n))
			}
			if num != e.Kind {
				e.Kind, e.ToMove = num, gamev1.Seat_SEAT_UNSPECIFIED
			}
			if num == KindMoveApplied {
				if err := readToMove(msg, &e.ToMove); err != nil {
					return Event{}, err
				}
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return Event{}, fmt.Errorf("%w: field %d: %v", errBadEvent, num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return e, nil
}

// readToMove reads MoveApplied.to_move from its encoding into seat, which
// keeps its value if the field is absent (merging occurrences).
func readToMove(b []byte, seat *gamev1.Seat) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: move: %v", errBadEvent, protowire.ParseError(n))
		}
		b = b[n:]
		if num == fieldMoveToMove && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: move to_move: %v", errBadEvent, protowire.ParseError(n))
			}
			*seat, b = gamev1.Seat(int32(v)), b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("%w: move field %d: %v", errBadEvent, num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}
