package store

// Private tables (docs/matchmaking.md, "Private tables").
//
// # Keys
//
// A table is one JSON record under its own tag, so every change of a table
// is one Lua script on one node (the scripts decode, change and re-encode
// the record with cjson):
//
//	mm:table:{<CODE>}  string  the Table (JSON), PX = the idle TTL, renewed
//	                           by every change
//
// The player's live pointer (mm:player:{<player id>}, see the package
// comment) names a table as "table:<CODE>|<created ms>", so the one-live-
// ticket rule covers tables both ways: Enqueue refuses while the pointer
// names a table the player sits at (open or starting), CreateTable and
// JoinTable refuse while it names a live ticket or another such table.
//
// # States
//
// Open (players join and leave) -> Starting (the start is recorded: the
// request id of CreateMatch, the seed, the bots reserved for the bot seats;
// seats are frozen) -> Started (the match id is known); or Open -> Closed
// (the last human left). A Starting table is completed by whichever call
// comes next (a retry of StartTable on any instance): the same request id
// gives the same match, so a table starts exactly once even when the
// instance that recorded the start was killed.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors of the table operations.
var (
	ErrTableNotFound = errors.New("table not found")
	ErrTableFull     = errors.New("table full")
	ErrSeatTaken     = errors.New("seat taken")
	ErrTableStarted  = errors.New("table started")
	ErrSeated        = errors.New("player already seated")
	ErrNotHost       = errors.New("not the table's host")
	ErrSeatsOpen     = errors.New("open seats are free")
	// ErrTableChanged means the table changed between reading it and
	// recording its start; retrying is safe.
	ErrTableChanged = errors.New("table changed, retry")
)

// TableState is a table's life-cycle state, as stored.
type TableState string

// Table states.
const (
	TableOpen     TableState = "O"
	TableStarting TableState = "S"
	TableStarted  TableState = "P"
	TableClosed   TableState = "C"
)

// Clock is a table's time control in milliseconds (JSON-friendly for Lua).
type Clock struct {
	InitialMs   int64 `json:"i"`
	IncrementMs int64 `json:"n,omitempty"`
	DelayMs     int64 `json:"d,omitempty"`
}

// TableSeat is one seat of a table.
type TableSeat struct {
	// Bot is set for a seat a bot of Level takes when the table starts.
	Bot   bool   `json:"bot,omitempty"`
	Level string `json:"lvl,omitempty"`
	// Player sits there (a human who joined; a bot once started).
	Player *Player `json:"pl,omitempty"`
	// Joined orders the humans by arrival (the host passes in this order).
	Joined int64 `json:"j,omitempty"`
}

// UnmarshalJSON reads a seat; an empty seat may come back from a script as
// [] (the embedded store's cjson, unlike Redis's, encodes an empty Lua
// table as an array).
func (s *TableSeat) UnmarshalJSON(b []byte) error {
	if string(b) == "[]" {
		*s = TableSeat{}
		return nil
	}
	type plain TableSeat
	return json.Unmarshal(b, (*plain)(s))
}

// TableStart is a table's recorded start.
type TableStart struct {
	// RequestID is the CreateMatch idempotency key, and the holder of the
	// bots reserved for the table (ReserveBots).
	RequestID string `json:"rid"`
	// Seed is the match seed (a string: Lua numbers are doubles).
	Seed string `json:"seed"`
	// Bots are the reserved bots, by seat index (0-3).
	Bots map[string]StartBot `json:"bots,omitempty"`
}

// StartBot is a bot reserved for a seat.
type StartBot struct {
	Level    string `json:"lvl"`
	TicketID string `json:"t"`
	Player   Player `json:"pl"`
}

// Table is a private table's record.
type Table struct {
	Code      string       `json:"code"`
	Host      string       `json:"host"`
	RuleSet   string       `json:"rs"`
	Clock     Clock        `json:"tc"`
	Rated     bool         `json:"rated,omitempty"`
	Seats     [4]TableSeat `json:"seats"`
	State     TableState   `json:"st"`
	MatchID   string       `json:"m,omitempty"`
	Version   int64        `json:"v"`
	Seq       int64        `json:"seq"`
	CreatedMs int64        `json:"c"`
	ExpiresMs int64        `json:"exp"`
	Start     *TableStart  `json:"start,omitempty"`
}

// SeatOf returns the seat index (0-3) of player, or -1.
func (t *Table) SeatOf(player string) int {
	for i, s := range t.Seats {
		if s.Player != nil && s.Player.ID == player && !s.Bot {
			return i
		}
	}
	return -1
}

// Seated reports whether player holds a seat at a table still gathering
// or starting: what the one-live-ticket rule counts.
func (t *Table) Seated(player string) bool {
	return (t.State == TableOpen || t.State == TableStarting) && t.SeatOf(player) >= 0
}

// RequestID is the deterministic CreateMatch request id of the table.
func (t *Table) RequestID() string {
	return "tbl-" + t.Code + "-" + strconv.FormatInt(t.CreatedMs, 10)
}

// crockford is Crockford's base32 alphabet (no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// CodeLen is the length of an invite code: 12 characters of 5 bits.
const CodeLen = 12

// NewCode returns a random invite code: 60 bits from crypto/rand.
func NewCode() string {
	var b [8]byte
	rand.Read(b[:])
	v := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	out := make([]byte, CodeLen)
	for i := range out {
		out[i] = crockford[v&31]
		v >>= 5
	}
	return string(out)
}

// ErrBadCode is returned by ParseCode.
var ErrBadCode = errors.New("malformed invite code")

// ParseCode returns the canonical form of an invite code typed by a
// person: dashes and spaces are ignored, case too, and the letters
// Crockford's base32 reads as digits (I and L as 1, O as 0) are read so.
func ParseCode(s string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == '-' || r == ' ':
			continue
		case r == 'I' || r == 'L':
			r = '1'
		case r == 'O':
			r = '0'
		}
		if r > 127 || !strings.ContainsRune(crockford, r) {
			return "", fmt.Errorf("%w: %q is not a code character (Crockford base32: 0-9 and A-Z without I, L, O, U)", ErrBadCode, r)
		}
		b.WriteRune(r)
	}
	if b.Len() != CodeLen {
		return "", fmt.Errorf("%w: %d code characters, want %d", ErrBadCode, b.Len(), CodeLen)
	}
	return b.String(), nil
}

// DisplayCode shows a canonical code in groups of four: "7KQ2-M9XD-4TBA".
func DisplayCode(code string) string {
	if len(code) != CodeLen {
		return code
	}
	return code[:4] + "-" + code[4:8] + "-" + code[8:]
}

// TableSettings are the table store's settings.
type TableSettings struct {
	// IdleTTL closes a table nothing happened at for that long.
	IdleTTL time.Duration
	// ClosedRetention keeps a closed table readable (its watchers see it
	// closed).
	ClosedRetention time.Duration
}

func (s *Store) tableKey(code string) string { return s.prefix + "mm:table:{" + code + "}" }

// TablesChannel is the pub/sub channel announcing changed tables (message:
// the code).
func (s *Store) TablesChannel() string { return s.prefix + "mm:tables" }

func (s *Store) publishTable(ctx context.Context, code string) {
	s.rdb.Publish(ctx, s.TablesChannel(), code)
}

func decodeTable(raw string) (*Table, error) {
	var t Table
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return nil, fmt.Errorf("decode table: %w", err)
	}
	return &t, nil
}

// Table reads a table.
func (s *Store) Table(ctx context.Context, code string) (*Table, error) {
	raw, err := s.rdb.Get(ctx, s.tableKey(code)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, ErrTableNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", code, err)
	}
	return decodeTable(raw)
}

func tablePointer(code string, now time.Time) string {
	return "table:" + code + "|" + strconv.FormatInt(now.UnixMilli(), 10)
}

// takePointer makes the player's live pointer name table code, unless the
// player has a live ticket or sits at another open table (ErrSeated). A
// pointer already naming code is left as it is.
func (s *Store) takePointer(ctx context.Context, player, code string, ttl time.Duration, now time.Time) error {
	ptr := s.pointerKey(player)
	val := tablePointer(code, now)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt == maxEnqueueAttempts {
			return fmt.Errorf("seat %s: %w", player, ErrContention)
		}
		ok, err := s.rdb.SetNX(ctx, ptr, val, ttl).Result()
		if err != nil {
			return fmt.Errorf("set live pointer: %w", err)
		}
		if ok {
			return nil
		}
		cur, err := s.rdb.Get(ctx, ptr).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read live pointer: %w", err)
		}
		if strings.HasPrefix(cur, "table:"+code+"|") {
			return nil
		}
		live, wait, err := s.pointerLive(ctx, cur, player, now.Add(time.Since(start)))
		if err != nil {
			return err
		}
		if live {
			return ErrSeated
		}
		if wait {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		ks, args := replacePointerArgs(ptr, cur, val, ttl.Milliseconds())
		swapped, err := replacePointerScript.Run(ctx, s.rdb, ks, args...).Int()
		if err != nil {
			return fmt.Errorf("replace live pointer: %w", err)
		}
		if swapped == 1 {
			return nil
		}
	}
}

// pointerLive tells what a live pointer's value holds the player to: live
// (a live ticket, or a seat at an open or starting table), wait (a ticket
// or seat being written right now: within PointerGrace of the pointer),
// or nothing (the pointer may be replaced).
func (s *Store) pointerLive(ctx context.Context, cur, player string, now time.Time) (live, wait bool, err error) {
	target, createdStr, _ := strings.Cut(cur, "|")
	created, _ := strconv.ParseInt(createdStr, 10, 64)
	young := now.Sub(time.UnixMilli(created)) < s.set.PointerGrace
	if code, ok := strings.CutPrefix(target, "table:"); ok {
		t, err := s.Table(ctx, code)
		switch {
		case errors.Is(err, ErrTableNotFound):
			return false, young, nil
		case err != nil:
			return false, false, err
		}
		if t.Seated(player) {
			return true, false, nil
		}
		return false, young && t.State == TableOpen, nil
	}
	t, err := s.Ticket(ctx, target)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, young, nil
	case err != nil:
		return false, false, err
	}
	return t.State.Live(), false, nil
}

// dropTablePointer deletes the player's pointer if it names table code.
func (s *Store) dropTablePointer(ctx context.Context, player, code string) {
	s.dropPointer(ctx, s.pointerKey(player), "table:"+code)
}

// touchPointers renews the live pointers of a table's humans, best effort,
// so a pointer lives as long as its table (the table's TTL is renewed by
// every change; the pointer, in another slot, cannot be in the same
// script).
func (s *Store) touchPointers(ctx context.Context, t *Table, ttl time.Duration) {
	pipe := s.rdb.Pipeline()
	for _, seat := range t.Seats {
		if seat.Player != nil && !seat.Bot {
			pipe.PExpire(ctx, s.pointerKey(seat.Player.ID), ttl)
		}
	}
	pipe.Exec(ctx)
}

// pointerTTLFor is the TTL of a table pointer: longer than the table's.
func pointerTTLFor(set TableSettings) time.Duration { return set.IdleTTL + time.Minute }

// CreateTable opens table t (Code, CreatedMs, Version, State and ExpiresMs
// are set here) with its host seated at seat hostSeat (0-3).
func (s *Store) CreateTable(ctx context.Context, t *Table, host Player, hostSeat int, set TableSettings, now time.Time) (*Table, error) {
	t.Host, t.State, t.Version, t.Seq = host.ID, TableOpen, 1, 1
	t.CreatedMs, t.ExpiresMs = now.UnixMilli(), now.Add(set.IdleTTL).UnixMilli()
	h := host
	t.Seats[hostSeat] = TableSeat{Player: &h, Joined: 1}
	for attempt := 0; attempt < 5; attempt++ {
		t.Code = NewCode()
		if err := s.takePointer(ctx, host.ID, t.Code, pointerTTLFor(set), now); err != nil {
			return nil, err
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("encode table: %w", err)
		}
		ok, err := s.rdb.SetNX(ctx, s.tableKey(t.Code), b, set.IdleTTL).Result()
		if err != nil {
			s.dropTablePointer(context.WithoutCancel(ctx), host.ID, t.Code)
			return nil, fmt.Errorf("create table: %w", err)
		}
		if ok {
			return t, nil
		}
		// 2^-60 per open table: practically never, but a clash must not
		// hand the host another table.
		s.dropTablePointer(context.WithoutCancel(ctx), host.ID, t.Code)
	}
	return nil, errors.New("create table: no free code after 5 attempts")
}

// tableResult decodes a table script's reply {status, table JSON}.
func tableResult(res any, err error) (string, *Table, error) {
	if err != nil {
		return "", nil, fmt.Errorf("table script: %w", err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) != 2 {
		return "", nil, fmt.Errorf("table script: unexpected reply %v", res)
	}
	st, _ := arr[0].(string)
	raw, _ := arr[1].(string)
	if raw == "" {
		return st, nil, nil
	}
	t, err := decodeTable(raw)
	return st, t, err
}

// statusErr maps a table script's status to an error.
func statusErr(st string) error {
	switch st {
	case "OK", "SAME":
		return nil
	case "NOTFOUND":
		return ErrTableNotFound
	case "FULL":
		return ErrTableFull
	case "TAKEN":
		return ErrSeatTaken
	case "STARTED":
		return ErrTableStarted
	case "NOTHOST":
		return ErrNotHost
	case "CHANGED":
		return ErrTableChanged
	}
	return fmt.Errorf("table script: unknown status %q", st)
}

// JoinTable seats player at table code: at seat (0-3), or the first free
// open seat for seat -1. Joining a table one sits at returns it unchanged.
func (s *Store) JoinTable(ctx context.Context, code string, p Player, seat int, set TableSettings, now time.Time) (*Table, error) {
	// Cheap refusals first, without touching the player's pointer.
	t, err := s.Table(ctx, code)
	if err != nil {
		return nil, err
	}
	if t.State == TableClosed {
		return nil, ErrTableNotFound
	}
	if t.SeatOf(p.ID) >= 0 {
		return t, nil
	}
	if t.State != TableOpen {
		return nil, ErrTableStarted
	}
	if err := s.takePointer(ctx, p.ID, code, pointerTTLFor(set), now); err != nil {
		return nil, err
	}
	pj, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode player: %w", err)
	}
	k, a := joinArgs(s.tableKey(code), pj, p.ID, seat+1, now.UnixMilli(), set.IdleTTL.Milliseconds())
	st, t, err := tableResult(joinScript.Run(ctx, s.rdb, k, a...).Result())
	if err == nil {
		err = statusErr(st)
	}
	if err != nil {
		s.dropTablePointer(context.WithoutCancel(ctx), p.ID, code)
		return nil, err
	}
	if st == "OK" {
		s.touchPointers(ctx, t, pointerTTLFor(set))
		s.publishTable(ctx, code)
	}
	return t, nil
}

// LeaveTable frees player's seat; the host's leaving passes the table to
// the human who joined first after them, or closes it. Leaving a table one
// is not at returns it unchanged.
func (s *Store) LeaveTable(ctx context.Context, code, player string, set TableSettings, now time.Time) (*Table, error) {
	k, a := leaveArgs(s.tableKey(code), player, now.UnixMilli(), set.IdleTTL.Milliseconds(), set.ClosedRetention.Milliseconds())
	st, t, err := tableResult(leaveScript.Run(ctx, s.rdb, k, a...).Result())
	if err != nil {
		return nil, err
	}
	if err := statusErr(st); err != nil {
		return nil, err
	}
	if st == "OK" {
		s.dropTablePointer(ctx, player, code)
		s.publishTable(ctx, code)
	}
	return t, nil
}

// BeginStart records the start of table code by host, if the table is
// still at version (what the caller read and planned the start on). A
// table already starting or started is returned as it is (its recorded
// start stands).
func (s *Store) BeginStart(ctx context.Context, code, host string, version int64, start TableStart, set TableSettings, now time.Time) (*Table, error) {
	b, err := json.Marshal(start)
	if err != nil {
		return nil, fmt.Errorf("encode start: %w", err)
	}
	k, a := beginStartArgs(s.tableKey(code), host, version, b, now.UnixMilli(), set.IdleTTL.Milliseconds())
	st, t, err := tableResult(beginStartScript.Run(ctx, s.rdb, k, a...).Result())
	if err != nil {
		return nil, err
	}
	if err := statusErr(st); err != nil {
		return nil, err
	}
	if st == "OK" {
		s.publishTable(ctx, code)
	}
	return t, nil
}

// FinishStart marks a starting table started with its match, seating the
// reserved bots. Finishing a started table returns it unchanged.
func (s *Store) FinishStart(ctx context.Context, code, match string, set TableSettings, now time.Time) (*Table, error) {
	k, a := finishStartArgs(s.tableKey(code), match, now.UnixMilli(), set.IdleTTL.Milliseconds())
	st, t, err := tableResult(finishStartScript.Run(ctx, s.rdb, k, a...).Result())
	if err != nil {
		return nil, err
	}
	if err := statusErr(st); err != nil {
		return nil, err
	}
	if st == "OK" {
		s.publishTable(ctx, code)
	}
	return t, nil
}

// GuessLimit is the code-guessing rate limit of a player: at most Max
// unknown codes per Window.
type GuessLimit struct {
	Max    int
	Window time.Duration
}

func (s *Store) guessKey(player string) string { return s.prefix + "mm:guess:{" + player + "}" }

// GuessesLeft reports whether player may try another code, and if not for
// how long they must wait.
func (s *Store) GuessesLeft(ctx context.Context, player string, lim GuessLimit) (bool, time.Duration, error) {
	pipe := s.rdb.Pipeline()
	get := pipe.Get(ctx, s.guessKey(player))
	ttl := pipe.PTTL(ctx, s.guessKey(player))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, 0, fmt.Errorf("read guesses of %s: %w", player, err)
	}
	n, _ := strconv.Atoi(get.Val())
	if n < lim.Max {
		return true, 0, nil
	}
	return false, max(ttl.Val(), time.Second), nil
}

// CountGuess counts an unknown code tried by player.
func (s *Store) CountGuess(ctx context.Context, player string, lim GuessLimit) error {
	k, a := guessArgs(s.guessKey(player), lim.Window.Milliseconds())
	if err := guessScript.Run(ctx, s.rdb, k, a...).Err(); err != nil {
		return fmt.Errorf("count guess of %s: %w", player, err)
	}
	return nil
}
