package redisconn

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Layout names the KEYS and ARGV slots of a Lua script, so that Go and Lua
// count them from one table. The Go side declares 0-based index constants
// and the layout indexed by them:
//
//	const (
//		leaseKey = iota // KEYS
//		leaseNKeys
//	)
//	var leaseLayout = redisconn.Layout{Name: "lease", Keys: []string{leaseKey: "K_LEASE"}, ...}
//
// and fills the slots by the same constants; [Layout.Script] prepends to the
// Lua body a header declaring each name with its 1-based index
// (local K_LEASE = 1), so the body writes KEYS[K_LEASE], never KEYS[1].
// Key names start with K_, argument names with A_.
//
// A variable-length tail (a list of events, one group of keys per claimed
// formation) follows the fixed slots; its name is the index of its first
// slot, and the body reads it as ARGV[A_EVENTS + i - 1].
//
// The header also checks the counts on every run and fails with an ERR
// reply when the caller passed a different number of slots: a mismatch is
// a bug found on the first call, never a silently shifted argument.
type Layout struct {
	// Name names the script in the count check's error.
	Name string
	// Keys and Args name the fixed KEYS and ARGV slots, in order.
	Keys, Args []string
	// KeyTail and ArgTail are the variable-length tails after them.
	KeyTail, ArgTail Tail
}

// Tail is a run of slots after the fixed ones, made of records of Width
// slots each, which the script indexes by arithmetic (KEYS[K_TICKETS + i]):
// a variable-length list, or with Count a fixed number of records.
type Tail struct {
	// Name is the tail's name in Lua ("" = no tail): the index of its
	// first slot.
	Name string
	// Width is the number of slots per record (0 means 1).
	Width int
	// Count is the exact number of records; 0 means any number.
	Count int
}

// Stride returns the slots per record of the tail.
func (t Tail) Stride() int { return max(t.Width, 1) }

var slotName = regexp.MustCompile(`^[KA]_[A-Z0-9_]+$`)

// Script returns the script whose source is l's header followed by body.
// It panics if l is malformed (an unnamed slot, a name used twice, a
// name without its K_/A_ prefix): layouts are package-level literals, so
// the first test of the package finds the mistake.
func (l Layout) Script(body string) *Script {
	if err := l.validate(); err != nil {
		panic(err)
	}
	return NewScript(l.Header() + body)
}

func (l Layout) validate() error {
	seen := map[string]bool{}
	check := func(name, prefix string) error {
		if !slotName.MatchString(name) || !strings.HasPrefix(name, prefix) {
			return fmt.Errorf("script %s: slot name %q must match %s[A-Z0-9_]+", l.Name, name, prefix)
		}
		if seen[name] {
			return fmt.Errorf("script %s: slot name %s used twice", l.Name, name)
		}
		seen[name] = true
		return nil
	}
	for _, n := range l.Keys {
		if err := check(n, "K_"); err != nil {
			return err
		}
	}
	for _, n := range l.Args {
		if err := check(n, "A_"); err != nil {
			return err
		}
	}
	if l.KeyTail.Name != "" {
		if err := check(l.KeyTail.Name, "K_"); err != nil {
			return err
		}
	}
	if l.ArgTail.Name != "" {
		if err := check(l.ArgTail.Name, "A_"); err != nil {
			return err
		}
	}
	return nil
}

// Header returns the Lua that [Layout.Script] puts before the body: the
// slot names as locals, then the count check.
func (l Layout) Header() string {
	var b strings.Builder
	declare := func(names []string, tail Tail) {
		for i, n := range names {
			b.WriteString("local " + n + " = " + strconv.Itoa(i+1) + "\n")
		}
		if tail.Name != "" {
			b.WriteString("local " + tail.Name + " = " + strconv.Itoa(len(names)+1) + "\n")
		}
	}
	declare(l.Keys, l.KeyTail)
	declare(l.Args, l.ArgTail)
	cond := func(table string, n int, tail Tail) string {
		if tail.Name == "" {
			return fmt.Sprintf("#%s ~= %d", table, n)
		}
		if tail.Count > 0 {
			return fmt.Sprintf("#%s ~= %d", table, n+tail.Count*tail.Stride())
		}
		c := fmt.Sprintf("#%s < %d", table, n)
		if s := tail.Stride(); s > 1 {
			c += fmt.Sprintf(" or (#%s - %d) %% %d ~= 0", table, n, s)
		}
		return c
	}
	fmt.Fprintf(&b, "if %s or %s then return redis.error_reply('ERR script %s: %s') end\n",
		cond("KEYS", len(l.Keys), l.KeyTail), cond("ARGV", len(l.Args), l.ArgTail), l.Name, l.counts())
	return b.String()
}

// counts describes the expected numbers of slots, for the error reply.
func (l Layout) counts() string {
	side := func(n int, tail Tail, what string) string {
		s := strconv.Itoa(n)
		if tail.Count > 0 {
			s = strconv.Itoa(n + tail.Count*tail.Stride())
		} else if tail.Name != "" {
			s += "+" + strconv.Itoa(tail.Stride()) + "n"
		}
		return s + " " + what
	}
	return side(len(l.Keys), l.KeyTail, "keys") + " and " + side(len(l.Args), l.ArgTail, "arguments") + " expected"
}
