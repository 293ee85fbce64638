// Package scripttest checks that a Lua script and the Go code that calls it
// agree on its KEYS and ARGV (see [redisconn.Layout]). Import it only from
// tests.
package scripttest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

var (
	tableUse   = regexp.MustCompile(`\b(KEYS|ARGV)\b`)
	identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	number     = regexp.MustCompile(`^[0-9]+$`)
	slotName   = regexp.MustCompile(`^[KA]_[A-Z0-9_]+$`)
)

// CheckSource checks body, the Lua of a script without the header that
// l adds, against l:
//   - every KEYS[...] and ARGV[...] indexes by a name of l (K_ names for
//     KEYS, A_ names for ARGV), never by a bare number: an index that is
//     not exactly a fixed slot's name is allowed only into a declared tail;
//   - #KEYS and #ARGV appear only where there is a tail, and the tables
//     are used in no other way (unpack(ARGV) would hide the count);
//   - every name of l is used, so Go passes nothing the script ignores.
func CheckSource(l redisconn.Layout, body string) error {
	code := stripLua(body)
	sides := map[string]*side{
		"KEYS": newSide("K_", l.Keys, l.KeyTail),
		"ARGV": newSide("A_", l.Args, l.ArgTail),
	}
	var errs []error
	for _, m := range tableUse.FindAllStringIndex(code, -1) {
		table := code[m[0]:m[1]]
		s := sides[table]
		before := strings.TrimRight(code[:m[0]], " \t")
		rest := code[m[1]:]
		switch {
		case strings.HasPrefix(rest, "["):
			idx, ok := bracket(rest)
			if !ok {
				errs = append(errs, fmt.Errorf("unbalanced %s[ at %q", table, snippet(code, m[0])))
				continue
			}
			if err := s.index(table, idx); err != nil {
				errs = append(errs, err)
			}
		case strings.HasSuffix(before, "#"):
			if s.tail == "" {
				errs = append(errs, fmt.Errorf("#%s in a script without a %s tail", table, table))
			}
		default:
			errs = append(errs, fmt.Errorf("%s used other than indexed or counted at %q", table, snippet(code, m[0])))
		}
	}
	// Every name must be used; slot names may also appear outside
	// KEYS[...] (local a = A_MATCHES + e * width).
	used := map[string]bool{}
	for _, id := range identifier.FindAllString(code, -1) {
		used[id] = true
	}
	for _, table := range []string{"KEYS", "ARGV"} {
		s := sides[table]
		for _, n := range s.names {
			if !used[n] {
				errs = append(errs, fmt.Errorf("%s slot %s is declared but never used", table, n))
			}
		}
		if s.tail != "" && !used[s.tail] {
			errs = append(errs, fmt.Errorf("%s tail %s is declared but never used", table, s.tail))
		}
	}
	// A slot name the layout does not declare is an undefined Lua global
	// (nil): an index into nothing.
	for id := range used {
		if slotName.MatchString(id) && !sides["KEYS"].declared[id] && !sides["ARGV"].declared[id] {
			errs = append(errs, fmt.Errorf("slot name %s is not declared by the layout", id))
		}
	}
	return errors.Join(errs...)
}

// CheckCall checks what Go passes to a script against l: as many keys and
// arguments as the fixed slots, plus whole records of each tail; no empty
// key and no nil argument.
func CheckCall(l redisconn.Layout, keys []string, args []any) error {
	var errs []error
	count := func(table string, got, fixed int, tail redisconn.Tail) {
		switch {
		case tail.Name == "" && got != fixed:
			errs = append(errs, fmt.Errorf("%d %s passed, the layout declares %d", got, table, fixed))
		case tail.Count > 0 && got != fixed+tail.Count*tail.Stride():
			errs = append(errs, fmt.Errorf("%d %s passed, the layout declares %d plus %d records of %d", got, table, fixed, tail.Count, tail.Stride()))
		case tail.Name != "" && tail.Count == 0 && (got < fixed || (got-fixed)%tail.Stride() != 0):
			errs = append(errs, fmt.Errorf("%d %s passed, the layout declares %d plus records of %d", got, table, fixed, tail.Stride()))
		}
	}
	count("keys", len(keys), len(l.Keys), l.KeyTail)
	count("arguments", len(args), len(l.Args), l.ArgTail)
	for i, k := range keys {
		if k == "" {
			errs = append(errs, fmt.Errorf("key %d (%s) is empty", i+1, slotOf(l.Keys, i, l.KeyTail)))
		}
	}
	for i, a := range args {
		if a == nil {
			errs = append(errs, fmt.Errorf("argument %d (%s) is nil", i+1, slotOf(l.Args, i, l.ArgTail)))
		}
	}
	return errors.Join(errs...)
}

func slotOf(names []string, i int, tail redisconn.Tail) string {
	if i < len(names) {
		return names[i]
	}
	return tail.Name + " tail"
}

type side struct {
	prefix   string
	names    []string
	fixed    map[string]bool
	declared map[string]bool
	tail     string
}

func newSide(prefix string, names []string, tail redisconn.Tail) *side {
	s := &side{prefix: prefix, names: names, fixed: map[string]bool{}, declared: map[string]bool{}, tail: tail.Name}
	for _, n := range names {
		s.fixed[n], s.declared[n] = true, true
	}
	if tail.Name != "" {
		s.declared[tail.Name] = true
	}
	return s
}

// index checks the index expression of one table[idx].
func (s *side) index(table, idx string) error {
	idx = strings.TrimSpace(idx)
	if number.MatchString(idx) {
		return fmt.Errorf("%s[%s]: index by a declared name, not a number", table, idx)
	}
	if s.fixed[idx] {
		return nil
	}
	for _, id := range identifier.FindAllString(idx, -1) {
		if slotName.MatchString(id) && (!strings.HasPrefix(id, s.prefix) || !s.declared[id]) {
			return fmt.Errorf("%s[%s]: %s is not a declared %s slot", table, idx, id, table)
		}
	}
	if s.tail == "" {
		return fmt.Errorf("%s[%s]: not a declared slot, and the layout declares no %s tail", table, idx, table)
	}
	return nil // an index into the tail
}

// bracket returns what is inside the bracket that s starts with.
func bracket(s string) (string, bool) {
	depth := 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return s[1:i], true
			}
		}
	}
	return "", false
}

func snippet(s string, i int) string {
	return s[i:min(len(s), i+30)]
}

// stripLua returns src with comments and the contents of quoted strings
// blanked out, so that only code is checked. (Long brackets [[...]] are
// not used by our scripts.)
func stripLua(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '-' && i+1 < len(b) && b[i+1] == '-':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '\'' || b[i] == '"':
			q := b[i]
			for i++; i < len(b) && b[i] != q; i++ {
				if b[i] == '\\' && i+1 < len(b) {
					b[i] = ' '
					i++
				}
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
		}
	}
	return string(b)
}

// Case is one script and one call of it, as its Go builder lays it out.
type Case struct {
	Name   string
	Layout redisconn.Layout
	Body   string // the Lua without the layout's header
	Script *redisconn.Script
	Keys   []string
	Args   []any
}

// Run checks each case with [CheckSource] and [CheckCall], then runs it
// once through c and returns the replies (nil for a nil reply). A script
// error fails the test: the header's count check answers one when Go
// passes a different number of slots.
func Run(t testing.TB, c redisconn.Processor, cases ...Case) []any {
	t.Helper()
	out := make([]any, len(cases))
	for i, tc := range cases {
		if err := CheckSource(tc.Layout, tc.Body); err != nil {
			t.Errorf("%s: the Lua and the layout disagree:\n%v", tc.Name, err)
		}
		if err := CheckCall(tc.Layout, tc.Keys, tc.Args); err != nil {
			t.Errorf("%s: the Go call and the layout disagree:\n%v", tc.Name, err)
		}
		v, err := tc.Script.Run(context.Background(), c, tc.Keys, tc.Args...).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Errorf("%s: run: %v", tc.Name, err)
		}
		out[i] = v
	}
	return out
}
