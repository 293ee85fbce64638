package match

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

// noSeat marks "no running clock".
const noSeat = -1

// Clocks are the four clocks of a match (docs/rules.md section 10). The server
// is the only clock authority: the mover's clock runs from the moment the
// previous change was applied (TurnStart) until the server applies the
// mover's move.
type Clocks struct {
	Remaining [rules.NumSeats]time.Duration
	// Moved records which seats made their first move (the 30-second
	// first-move limit applies until then).
	Moved [rules.NumSeats]bool
	// Running is the seat whose clock runs, or noSeat.
	Running int
	// TurnStart is when the running clock started.
	TurnStart time.Time
	// LagTracked marks the seats that claimed a think time at least once;
	// LagQuota is their lag compensation quota (lag.go).
	LagTracked [rules.NumSeats]bool
	LagQuota   [rules.NumSeats]time.Duration
}

// newClocks returns clocks at the start of a match whose first mover is seat.
func newClocks(tc timecontrol.TimeControl, first rules.Seat, now time.Time) Clocks {
	c := Clocks{Running: int(first), TurnStart: now}
	for s := range c.Remaining {
		c.Remaining[s] = tc.Initial
	}
	return c
}

// Deadline is when the running seat flags, and whether the first-move limit
// is what sets it. Zero when no clock runs.
func (c *Clocks) Deadline(tc timecontrol.TimeControl, firstMoveLimit time.Duration) (time.Time, bool) {
	if c.Running == noSeat {
		return time.Time{}, false
	}
	d := c.TurnStart.Add(tc.Delay + c.Remaining[c.Running])
	if !c.Moved[c.Running] {
		if f := c.TurnStart.Add(firstMoveLimit); f.Before(d) {
			return f, true
		}
	}
	return d, false
}

// ClockReading is a match's clocks read at one moment.
type ClockReading struct {
	// Remaining is each seat's time left at that moment: the running
	// seat's time used since its turn started (less any delay) is taken off.
	Remaining [rules.NumSeats]time.Duration
	// Running is the seat whose clock runs, or -1 when none does.
	Running int
	// Deadline is when the running seat flags (zero when none runs).
	Deadline time.Time
}

// read reads the clocks at now.
func (c *Clocks) read(tc timecontrol.TimeControl, firstMoveLimit time.Duration, now time.Time) ClockReading {
	r := ClockReading{Remaining: c.Remaining, Running: c.Running}
	if s := c.Running; s != noSeat {
		r.Deadline, _ = c.Deadline(tc, firstMoveLimit)
		used := max(now.Sub(c.TurnStart)-tc.Delay, 0)
		r.Remaining[s] = max(c.Remaining[s]-used, 0)
	}
	return r
}

// charge stops the running clock at now: the time used (less any delay) is
// taken off, and the increment added when the turn ended with a move.
func (c *Clocks) charge(tc timecontrol.TimeControl, now time.Time, moved bool) {
	s := c.Running
	if s == noSeat {
		return
	}
	used := max(now.Sub(c.TurnStart)-tc.Delay, 0)
	c.Remaining[s] = max(c.Remaining[s]-used, 0)
	if moved {
		c.Remaining[s] += tc.Increment
		c.Moved[s] = true
	}
	c.Running = noSeat
}

// follow updates the clocks after a change to the game: when the turn
// passed (the ply or the seat to move changed) the old clock is charged and
// the new mover's clock starts at now; when the game ended no clock runs.
// moved says whether the running seat ended its turn by moving.
func (c *Clocks) follow(tc timecontrol.TimeControl, g *rules.Game, now time.Time, turnPassed, moved bool) {
	if g.Over() {
		c.charge(tc, now, moved)
		return
	}
	if !turnPassed && c.Running == int(g.ToMove()) {
		return
	}
	c.charge(tc, now, moved)
	if g.Status(g.ToMove()) == rules.Live {
		c.Running, c.TurnStart = int(g.ToMove()), now
	}
}

// Status is the life-cycle state of a match.
type Status uint8

// Match statuses (values as in match.v1.MatchStatus).
const (
	StatusActive   Status = 1
	StatusFinished Status = 2
	StatusAborted  Status = 3
)

// record is the mutable part of a match besides the engine's game: status,
// exit reasons, clocks, and the last move for snapshots. It is stored as a
// small binary value beside the engine's encoding.
type record struct {
	Status Status
	// Exit holds each seat's exit reason (values of game.v1.ExitReason).
	Exit       [rules.NumSeats]uint8
	Clocks     Clocks
	FinishedAt time.Time
	// LastMove is the encoded game.v1.MoveEffects of the last move, or nil.
	LastMove []byte
	// Premoves are the seats' premove queues (premove.go).
	Premoves [rules.NumSeats]Premoves
}

// Record formats: 1 without premoves, 2 with the four premove queues
// between the fixed part and the last move, 3 with the lag quotas (a byte
// of tracked seats, then each seat's quota in milliseconds as a uvarint)
// before the four queues. A record none of whose queues ever changed is
// written in format 1, which instances older than premoves read; one with
// no lag-tracked seat in format 1 or 2, which instances older than lag
// compensation read.
const (
	recordFormat         = 1
	recordFormatPremoves = 2
	recordFormatLag      = 3
)

// recordFixedLen: format, status, 4 exit reasons, moved bits, running seat,
// turn start, 4 remaining times, finished at.
const recordFixedLen = 1 + 1 + 4 + 1 + 1 + 8 + 4*8 + 8

func (r *record) marshal() []byte {
	format := byte(recordFormat)
	for s := range r.Premoves {
		if r.Premoves[s].Change != PremoveNone {
			format = recordFormatPremoves
		}
	}
	var tracked byte
	for s, t := range r.Clocks.LagTracked {
		if t {
			tracked |= 1 << s
			format = recordFormatLag
		}
	}
	b := make([]byte, 0, recordFixedLen+len(r.LastMove))
	b = append(b, format, byte(r.Status))
	b = append(b, r.Exit[:]...)
	var moved byte
	for s, m := range r.Clocks.Moved {
		if m {
			moved |= 1 << s
		}
	}
	b = append(b, moved, byte(int8(r.Clocks.Running)))
	b = binary.BigEndian.AppendUint64(b, uint64(millis(r.Clocks.TurnStart)))
	for _, d := range r.Clocks.Remaining {
		b = binary.BigEndian.AppendUint64(b, uint64(d.Milliseconds()))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(millis(r.FinishedAt)))
	if format == recordFormatLag {
		b = append(b, tracked)
		for _, q := range r.Clocks.LagQuota {
			b = binary.AppendUvarint(b, uint64(max(q, 0).Milliseconds()))
		}
	}
	if format >= recordFormatPremoves {
		for s := range r.Premoves {
			b = appendPremoves(b, &r.Premoves[s])
		}
	}
	return append(b, r.LastMove...)
}

var errBadRecord = errors.New("bad match record")

func (r *record) unmarshal(b []byte) error {
	if len(b) < recordFixedLen || b[0] < recordFormat || b[0] > recordFormatLag {
		return errBadRecord
	}
	r.Status = Status(b[1])
	copy(r.Exit[:], b[2:6])
	for s := range r.Clocks.Moved {
		r.Clocks.Moved[s] = b[6]&(1<<s) != 0
	}
	r.Clocks.Running = int(int8(b[7]))
	r.Clocks.TurnStart = fromMillis(int64(binary.BigEndian.Uint64(b[8:])))
	for s := range r.Clocks.Remaining {
		r.Clocks.Remaining[s] = time.Duration(binary.BigEndian.Uint64(b[16+8*s:])) * time.Millisecond
	}
	r.FinishedAt = fromMillis(int64(binary.BigEndian.Uint64(b[48:])))
	rest := b[recordFixedLen:]
	r.Clocks.LagTracked, r.Clocks.LagQuota = [rules.NumSeats]bool{}, [rules.NumSeats]time.Duration{}
	if b[0] == recordFormatLag {
		if len(rest) < 1 {
			return errBadRecord
		}
		tracked := rest[0]
		rest = rest[1:]
		for s := range r.Clocks.LagQuota {
			ms, n := binary.Uvarint(rest)
			if n <= 0 || ms > uint64(time.Hour/time.Millisecond) {
				return fmt.Errorf("%w: lag quota", errBadRecord)
			}
			r.Clocks.LagTracked[s] = tracked&(1<<s) != 0
			r.Clocks.LagQuota[s] = time.Duration(ms) * time.Millisecond
			rest = rest[n:]
		}
	}
	r.Premoves = [rules.NumSeats]Premoves{}
	if b[0] >= recordFormatPremoves {
		for s := range r.Premoves {
			r.Premoves[s].Seat = rules.Seat(s)
			var err error
			if rest, err = readPremoves(rest, &r.Premoves[s]); err != nil {
				return fmt.Errorf("%w: %v", errBadRecord, err)
			}
		}
	}
	r.LastMove = nil
	if len(rest) > 0 {
		r.LastMove = append([]byte(nil), rest...)
	}
	return nil
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
