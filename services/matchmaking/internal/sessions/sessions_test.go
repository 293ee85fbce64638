package sessions

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn/scripttest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestMain stops the Redis servers and checks for leaked goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

var t0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

// forEachKind runs body on a standalone Redis and on a cluster, each with
// its own key prefix.
func forEachKind(t *testing.T, body func(t *testing.T, rdb redis.UniversalClient, st *Store)) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			body(t, rdb, New(rdb, prefix, DefaultSettings()))
		})
	}
}

func TestScriptLayouts(t *testing.T) {
	forEachKind(t, func(t *testing.T, rdb redis.UniversalClient, st *Store) {
		session, used := st.keys("abc")
		h1, h2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
		var cases []scripttest.Case
		k, a := createArgs(session, "g-p", "Guest", h1, 60000)
		cases = append(cases, scripttest.Case{Name: "create", Layout: createLayout, Body: createLua, Script: createScript, Keys: k, Args: a})
		k, a = rotateArgs(session, used, h1, h2, 1000, 60000, 10000, 5, "")
		cases = append(cases, scripttest.Case{Name: "rotate", Layout: rotateLayout, Body: rotateLua, Script: rotateScript, Keys: k, Args: a})
		k, a = revokeArgs(session, used, h2)
		cases = append(cases, scripttest.Case{Name: "revoke", Layout: revokeLayout, Body: revokeLua, Script: revokeScript, Keys: k, Args: a})
		k, a = linkArgs(session, used, h2, "o-acct", 2000, 60000, 10000)
		cases = append(cases, scripttest.Case{Name: "link", Layout: linkLayout, Body: linkLua, Script: linkScript, Keys: k, Args: a})
		got := scripttest.Run(t, rdb, cases...)
		want := []string{"1", "[ok g-p Guest]", "1", "[invalid]"}
		for i := range cases {
			if g := fmt.Sprint(got[i]); g != want[i] {
				t.Errorf("%s: reply %s, want %s", cases[i].Name, g, want[i])
			}
		}
	})
}

// TestRotation follows a session through refreshes: each token works
// once and returns the same player; the store holds hashes, never a
// token's secret.
func TestRotation(t *testing.T) {
	forEachKind(t, func(t *testing.T, rdb redis.UniversalClient, st *Store) {
		ctx := t.Context()
		want := Session{PlayerID: "g-abc", DisplayName: "Guest-ABC"}
		tok, exp, err := st.Create(ctx, want, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !exp.Equal(t0.Add(st.set.TTL)) {
			t.Errorf("expiry %v, want %v", exp, t0.Add(st.set.TTL))
		}
		now := t0
		for i := range 3 {
			now = now.Add(time.Hour)
			got, next, exp, err := st.Rotate(ctx, tok, now, "")
			if err != nil {
				t.Fatalf("rotation %d: %v", i, err)
			}
			if got != want || next == tok || !exp.Equal(now.Add(st.set.TTL)) {
				t.Fatalf("rotation %d = %+v, %q (was %q), %v", i, got, next, tok, exp)
			}
			tok = next
		}
		parsed, _ := parseToken(tok)
		session, used := st.keys(parsed.id)
		rec, err := rdb.HGetAll(ctx, session).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range rec {
			if strings.Contains(v, parsed.secret) {
				t.Errorf("field %s holds the secret", f)
			}
		}
		if n, _ := rdb.LLen(ctx, used).Result(); n != 3 {
			t.Errorf("rotated hashes remembered: %d, want 3", n)
		}
		for _, key := range []string{session, used} {
			ttl, err := rdb.PTTL(ctx, key).Result()
			if err != nil || ttl <= 0 || ttl > st.set.TTL {
				t.Errorf("%s: PTTL %v, %v; want within (0, %v]", key, ttl, err, st.set.TTL)
			}
		}
	})
}

// TestRename renames the player in the rotation: the answer and every
// later refresh carry the new name.
func TestRename(t *testing.T) {
	forEachKind(t, func(t *testing.T, _ redis.UniversalClient, st *Store) {
		ctx := t.Context()
		tok, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "Old"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		got, tok, _, err := st.Rotate(ctx, tok, t0, "New Name")
		if err != nil || got != (Session{PlayerID: "g-p", DisplayName: "New Name"}) {
			t.Fatalf("rename = %+v, %v", got, err)
		}
		if got, _, _, err = st.Rotate(ctx, tok, t0.Add(time.Minute), ""); err != nil || got.DisplayName != "New Name" {
			t.Fatalf("refresh after the rename = %+v, %v; want the new name", got, err)
		}
	})
}

// TestReuseRevokesTheSession presents a rotated token after the grace:
// the session ends, so the newest token stops working too.
func TestReuseRevokesTheSession(t *testing.T) {
	forEachKind(t, func(t *testing.T, _ redis.UniversalClient, st *Store) {
		ctx := t.Context()
		first, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "P"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		_, second, _, err := st.Rotate(ctx, first, t0, "")
		if err != nil {
			t.Fatal(err)
		}
		_, third, _, err := st.Rotate(ctx, second, t0.Add(time.Minute), "")
		if err != nil {
			t.Fatal(err)
		}
		// The oldest token, long after its rotation (and not the last one
		// rotated, so no grace either way).
		if _, _, _, err := st.Rotate(ctx, first, t0.Add(2*time.Minute), ""); !errors.Is(err, ErrReused) {
			t.Fatalf("reused token: %v, want %v", err, ErrReused)
		}
		if _, _, _, err := st.Rotate(ctx, third, t0.Add(2*time.Minute), ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("newest token after a reuse: %v, want %v (the session is revoked)", err, ErrInvalid)
		}
	})
}

// TestConcurrentRefresh sends one token from several callers at once, as
// two browser tabs would: one wins, the others are told they raced, and
// the winner's token still works.
func TestConcurrentRefresh(t *testing.T) {
	forEachKind(t, func(t *testing.T, _ redis.UniversalClient, st *Store) {
		ctx := t.Context()
		tok, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "P"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var winners []string
		raced := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, next, _, err := st.Rotate(ctx, tok, t0.Add(time.Second), "")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, next)
				case errors.Is(err, ErrRaced):
					raced++
				default:
					t.Errorf("concurrent refresh: %v", err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 || raced != 7 {
			t.Fatalf("%d winners, %d raced; want 1 and 7", len(winners), raced)
		}
		// After the grace the same token is a reuse.
		if _, _, _, err := st.Rotate(ctx, winners[0], t0.Add(2*time.Second), ""); err != nil {
			t.Fatalf("winner's token: %v", err)
		}
	})
}

func TestRevoke(t *testing.T) {
	forEachKind(t, func(t *testing.T, _ redis.UniversalClient, st *Store) {
		ctx := t.Context()
		tok, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "P"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		stranger := newToken(mustParse(t, tok).id).String() // the session id, another secret
		if ok, err := st.Revoke(ctx, stranger); ok || err != nil {
			t.Fatalf("revoke with a wrong secret = %v, %v; want a no-op", ok, err)
		}
		if ok, err := st.Revoke(ctx, tok); !ok || err != nil {
			t.Fatalf("revoke = %v, %v", ok, err)
		}
		if _, _, _, err := st.Rotate(ctx, tok, t0, ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("refresh after revoke: %v, want %v", err, ErrInvalid)
		}
		if ok, err := st.Revoke(ctx, tok); ok || err != nil {
			t.Fatalf("second revoke = %v, %v; want a no-op", ok, err)
		}
	})
}

func TestKeepRotatedIsBounded(t *testing.T) {
	forEachKind(t, func(t *testing.T, rdb redis.UniversalClient, st *Store) {
		st.set.KeepRotated = 2
		ctx := t.Context()
		tok, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "P"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		oldest := tok
		for i := range 4 {
			if _, tok, _, err = st.Rotate(ctx, tok, t0.Add(time.Duration(i)*time.Minute), ""); err != nil {
				t.Fatal(err)
			}
		}
		_, used := st.keys(mustParse(t, tok).id)
		if n, _ := rdb.LLen(ctx, used).Result(); n != 2 {
			t.Fatalf("rotated hashes kept: %d, want 2", n)
		}
		// Forgotten: merely invalid, and the session lives on.
		if _, _, _, err := st.Rotate(ctx, oldest, t0.Add(time.Hour), ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("forgotten rotated token: %v, want %v", err, ErrInvalid)
		}
		if _, _, _, err := st.Rotate(ctx, tok, t0.Add(time.Hour), ""); err != nil {
			t.Fatalf("current token after a forgotten one: %v", err)
		}
	})
}

func mustParse(t *testing.T, s string) token {
	t.Helper()
	tok, err := parseToken(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestParseToken(t *testing.T) {
	t.Parallel()
	good := newToken("").String()
	if _, err := parseToken(good); err != nil {
		t.Fatalf("parseToken(%q): %v", good, err)
	}
	parts := strings.Split(good, ".")
	for _, bad := range []string{
		"", "fks1", "fks2." + parts[1] + "." + parts[2], parts[1] + "." + parts[2],
		"fks1." + strings.ToUpper(parts[1]) + "." + parts[2],
		"fks1." + parts[1][:25] + "}." + parts[2],
		"fks1." + parts[1] + "." + parts[2][:42] + "=",
		"fks1." + parts[1] + "." + parts[2] + ".x",
		good + " ",
	} {
		if _, err := parseToken(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseToken(%q) = %v, want %v", bad, err, ErrMalformed)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add(newToken("").String())
	f.Add("fks1..")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseToken(s)
		if err != nil {
			return
		}
		// Whatever parses is safe in a key name and round-trips.
		if strings.ContainsAny(tok.id, "{}: ") || tok.String() != s {
			t.Fatalf("parseToken(%q) = %+v", s, tok)
		}
	})
}

// TestLink links a session's guest to an account: the token then no
// longer refreshes, the same call again gives the same answer, another
// account is refused, and rotated or unknown tokens get the errors of
// Rotate.
func TestLink(t *testing.T) {
	forEachKind(t, func(t *testing.T, rdb redis.UniversalClient, st *Store) {
		ctx := t.Context()
		first, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "P"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		_, tok, _, err := st.Rotate(ctx, first, t0, "")
		if err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Hour)
		guest, linkedAt, err := st.Link(ctx, tok, "o-acct", at)
		if err != nil || guest != "g-p" || !linkedAt.Equal(at) {
			t.Fatalf("Link = %q, %v, %v; want g-p, %v", guest, linkedAt, err, at)
		}
		if _, _, _, err := st.Rotate(ctx, tok, at.Add(time.Minute), ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("refresh after the link: %v, want %v", err, ErrInvalid)
		}
		guest, again, err := st.Link(ctx, tok, "o-acct", at.Add(time.Minute))
		if err != nil || guest != "g-p" || !again.Equal(at) {
			t.Errorf("Link again = %q, %v, %v; want g-p and the first call's time %v", guest, again, err, at)
		}
		var linked *LinkedError
		if _, _, err := st.Link(ctx, tok, "o-other", at.Add(time.Minute)); !errors.As(err, &linked) || linked.Account != "o-acct" {
			t.Errorf("Link to another account: %v, want a LinkedError naming o-acct", err)
		}
		if _, _, err := st.Link(ctx, first, "o-acct", at.Add(time.Minute)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Link with a rotated token of a linked session: %v, want %v", err, ErrInvalid)
		}
		parsed, _ := parseToken(tok)
		session, _ := st.keys(parsed.id)
		if ttl, err := rdb.PTTL(ctx, session).Result(); err != nil || ttl <= 0 {
			t.Errorf("linked session PTTL %v, %v; want it kept until its TTL", ttl, err)
		}
	})
}

// TestLinkRefusals: the refusals Link shares with Rotate.
func TestLinkRefusals(t *testing.T) {
	forEachKind(t, func(t *testing.T, _ redis.UniversalClient, st *Store) {
		ctx := t.Context()
		first, _, err := st.Create(ctx, Session{PlayerID: "g-p", DisplayName: "P"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		_, second, _, err := st.Rotate(ctx, first, t0, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Link(ctx, "fks1.x.y", "o-a", t0); !errors.Is(err, ErrMalformed) {
			t.Errorf("malformed: %v, want %v", err, ErrMalformed)
		}
		if _, _, err := st.Link(ctx, newToken("").String(), "o-a", t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("unknown: %v, want %v", err, ErrInvalid)
		}
		if _, _, err := st.Link(ctx, first, "o-a", t0.Add(time.Second)); !errors.Is(err, ErrRaced) {
			t.Errorf("just rotated: %v, want %v", err, ErrRaced)
		}
		if _, _, err := st.Link(ctx, first, "o-a", t0.Add(time.Hour)); !errors.Is(err, ErrReused) {
			t.Errorf("rotated long ago: %v, want %v", err, ErrReused)
		}
		if _, _, err := st.Link(ctx, second, "o-a", t0.Add(time.Hour)); !errors.Is(err, ErrInvalid) {
			t.Errorf("newest token after a reuse: %v, want %v (the session is revoked)", err, ErrInvalid)
		}
	})
}
