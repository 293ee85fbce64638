// Package sessions keeps the refresh tokens with which guests come back
// as the same player (AuthService.RefreshSession), in Redis (standalone or
// cluster).
//
// # Refresh tokens
//
// A refresh token is "fks1.<session id>.<secret>": the version, 128 random
// bits naming the session (26 base32 characters) and 256 random bits of
// secret (43 base64url characters). Redis holds only the SHA-256 of the
// secret, so a copy of the data cannot be used to sign in. The session id
// is not secret; it only finds the record.
//
// # Keys
//
// The two keys of a session share the hash tag of its id:
//
//	mm:session:{<id>}       hash  player p, display name n, current secret
//	                              hash h, previous hash ph, rotated at pt (ms),
//	                              once linked (AuthService.LinkGuest): the
//	                              account l and the link time lt (ms)
//	mm:session:{<id>}:used  list  hashes of rotated secrets, newest first,
//	                              at most Settings.KeepRotated
//
// Both expire Settings.TTL after the session's last rotation: a guest who
// comes back within the TTL keeps the player, one who does not loses it.
// A third, mm:session:{<id>}:barrier, is written by Store.Link only with
// Settings.Wait.Replicas > 0 (see Replication) and expires after a minute.
//
// # Rotation and reuse
//
// Every refresh replaces the secret (rotation), so a token works once. A
// rotated secret presented again means two parties hold copies of one
// token (a stolen copy, or a restored backup); the session cannot tell
// which is the player, so it is deleted ("revokes the family", as OAuth
// 2.0 Security BCP section 4.14 recommends) and both must start again. One
// exception avoids punishing an honest race (two browser tabs refreshing
// at once): the secret rotated last, presented again within
// Settings.RaceGrace of its rotation, gets [ErrRaced] and changes nothing.
//
// # Replication
//
// With Settings.Wait.Replicas > 0 a link (Store.Link) and its PlayerLinked
// event (LinkStream.Publish) count as made only once that many replicas of
// their masters confirmed them (Redis WAIT); otherwise they return
// [ErrNotReplicated], and a failover could still take them back. The two
// live on different masters, so each is confirmed on its own. Store.Link
// writes the barrier key and WAITs on the same connection, because WAIT
// covers only that connection's writes and a repeated link writes nothing.
package sessions

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// Errors of the store, distinguishable with errors.Is.
var (
	// ErrMalformed: the token is not one this package issues.
	ErrMalformed = errors.New("malformed refresh token")
	// ErrInvalid: the session is unknown, expired or revoked, or the
	// secret is not one of it.
	ErrInvalid = errors.New("refresh token unknown, expired or revoked")
	// ErrReused: a rotated token was presented again; the session is
	// revoked.
	ErrReused = errors.New("refresh token already used: the session is revoked")
	// ErrRaced: the token was rotated a moment ago by another request.
	ErrRaced = errors.New("refresh token rotated a moment ago by another request")
	// ErrNotReplicated: a link or its event was written but fewer replicas
	// than Settings.Wait.Replicas confirmed it in time; retrying is safe.
	ErrNotReplicated = redisconn.ErrNotReplicated
)

// LinkedError reports a session linked to another account already
// (Store.Link).
type LinkedError struct {
	// Account is the player id of the account the guest is linked to.
	Account string
}

func (e *LinkedError) Error() string {
	return "the guest is linked to account " + e.Account + " already"
}

// Settings are the store's tunables.
type Settings struct {
	// TTL is how long a session lives after its last use.
	TTL time.Duration
	// RaceGrace is how long after a rotation the rotated token gets
	// ErrRaced instead of revoking the session.
	RaceGrace time.Duration
	// KeepRotated is how many rotated hashes are remembered for reuse
	// detection; an older one presented again is merely invalid.
	KeepRotated int
	// Wait is the replica confirmation of links (and, given to
	// NewLinkStream, of their events).
	Wait Wait
}

// Wait is a confirmation by replicas (Redis WAIT).
type Wait struct {
	// Replicas, when > 0, is how many replicas must confirm a write
	// within Timeout before it counts as made.
	Replicas int
	// Timeout bounds the WAIT.
	Timeout time.Duration
}

// DefaultSettings returns 90 days, 10 seconds and 100 rotations (a
// daily player's 100 days, beyond the TTL), and no replica confirmation
// (500ms of WAIT once Wait.Replicas is set, as the match service's).
func DefaultSettings() Settings {
	return Settings{TTL: 90 * 24 * time.Hour, RaceGrace: 10 * time.Second, KeepRotated: 100,
		Wait: Wait{Timeout: 500 * time.Millisecond}}
}

// Session is the player behind a refresh token.
type Session struct {
	PlayerID    string
	DisplayName string
}

// Store keeps sessions in Redis.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	set    Settings
}

// New returns a store whose keys start with prefix.
func New(rdb redis.UniversalClient, prefix string, set Settings) *Store {
	return &Store{rdb: rdb, prefix: prefix, set: set}
}

const tokenVersion = "fks1"

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// token is a parsed refresh token.
type token struct{ id, secret string }

func (t token) String() string { return tokenVersion + "." + t.id + "." + t.secret }

func newToken(id string) token {
	if id == "" {
		var b [16]byte
		rand.Read(b[:]) // never fails (crypto/rand documents it)
		id = strings.ToLower(idEncoding.EncodeToString(b[:]))
	}
	var s [32]byte
	rand.Read(s[:])
	return token{id: id, secret: base64.RawURLEncoding.EncodeToString(s[:])}
}

const (
	idLen     = 26 // base32 of 16 bytes
	secretLen = 43 // base64url of 32 bytes
)

// parseToken checks the form of a token before any Redis call, so that
// garbage never reaches a key name.
func parseToken(s string) (token, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] != tokenVersion {
		return token{}, fmt.Errorf("%w: want %s.<id>.<secret>", ErrMalformed, tokenVersion)
	}
	t := token{id: parts[1], secret: parts[2]}
	if len(t.id) != idLen || len(t.secret) != secretLen {
		return token{}, fmt.Errorf("%w: wrong length", ErrMalformed)
	}
	if _, err := idEncoding.DecodeString(strings.ToUpper(t.id)); err != nil || strings.ToLower(t.id) != t.id {
		return token{}, fmt.Errorf("%w: bad session id", ErrMalformed)
	}
	if _, err := base64.RawURLEncoding.DecodeString(t.secret); err != nil {
		return token{}, fmt.Errorf("%w: bad secret", ErrMalformed)
	}
	return t, nil
}

func (t token) hash() string {
	h := sha256.Sum256([]byte(t.secret))
	return hex.EncodeToString(h[:])
}

func (s *Store) keys(id string) (session, used string) {
	session = s.prefix + "mm:session:{" + id + "}"
	return session, session + ":used"
}

// barrierTTL keeps a session's barrier key (Store.Link) only as long as a
// confirmation may take.
const barrierTTL = time.Minute

// Create starts a session for sess at now and returns its first refresh
// token and when it expires unless used.
func (s *Store) Create(ctx context.Context, sess Session, now time.Time) (string, time.Time, error) {
	t := newToken("")
	session, _ := s.keys(t.id)
	k, a := createArgs(session, sess.PlayerID, sess.DisplayName, t.hash(), s.set.TTL.Milliseconds())
	if err := createScript.Run(ctx, s.rdb, k, a...).Err(); err != nil {
		return "", time.Time{}, fmt.Errorf("create session: %w", err)
	}
	return t.String(), now.Add(s.set.TTL), nil
}

// Rotate trades refresh for its successor at now: it returns the session,
// the new token and its expiry. A non-empty rename becomes the player's
// display name in the same step. Errors wrap ErrMalformed, ErrInvalid,
// ErrReused, ErrRaced or a Redis error.
func (s *Store) Rotate(ctx context.Context, refresh string, now time.Time, rename string) (Session, string, time.Time, error) {
	t, err := parseToken(refresh)
	if err != nil {
		return Session{}, "", time.Time{}, err
	}
	next := newToken(t.id)
	session, used := s.keys(t.id)
	k, a := rotateArgs(session, used, t.hash(), next.hash(), now.UnixMilli(), s.set.TTL.Milliseconds(), s.set.RaceGrace.Milliseconds(), s.set.KeepRotated, rename)
	reply, err := rotateScript.Run(ctx, s.rdb, k, a...).StringSlice()
	if err != nil {
		return Session{}, "", time.Time{}, fmt.Errorf("rotate session: %w", err)
	}
	switch {
	case len(reply) == 3 && reply[0] == "ok":
		return Session{PlayerID: reply[1], DisplayName: reply[2]}, next.String(), now.Add(s.set.TTL), nil
	case len(reply) == 1 && reply[0] == "raced":
		return Session{}, "", time.Time{}, ErrRaced
	case len(reply) == 1 && reply[0] == "reused":
		return Session{}, "", time.Time{}, ErrReused
	case len(reply) == 1 && reply[0] == "invalid":
		return Session{}, "", time.Time{}, ErrInvalid
	}
	return Session{}, "", time.Time{}, fmt.Errorf("rotate session: unexpected reply %q", reply)
}

// Link ends the session of refresh by linking its player to account at
// now: the refresh token stops working for Rotate, and it returns the
// guest's player id and when the link was made. Sent again with the same
// account, the token that linked the session returns the same answer
// (the first call's time), so a retry is safe; with another account it
// returns a *LinkedError. The linked session is remembered for the TTL.
// Other errors wrap ErrMalformed, ErrInvalid, ErrReused, ErrRaced or a
// Redis error.
func (s *Store) Link(ctx context.Context, refresh, account string, now time.Time) (string, time.Time, error) {
	t, err := parseToken(refresh)
	if err != nil {
		return "", time.Time{}, err
	}
	session, used := s.keys(t.id)
	k, a := linkArgs(session, used, t.hash(), account, now.UnixMilli(), s.set.TTL.Milliseconds(), s.set.RaceGrace.Milliseconds())
	var confirmed error
	var cmd *redis.Cmd
	if s.set.Wait.Replicas > 0 {
		cmd, confirmed = s.linkAndWait(ctx, session, k, a)
	} else {
		cmd = linkScript.Run(ctx, s.rdb, k, a...)
	}
	reply, err := cmd.StringSlice()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("link session: %w", err)
	}
	switch {
	case len(reply) == 3 && reply[0] == "ok":
		if confirmed != nil {
			return "", time.Time{}, fmt.Errorf("link session: %w", confirmed)
		}
		ms, err := strconv.ParseInt(reply[2], 10, 64)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("link session: bad link time %q", reply[2])
		}
		return reply[1], time.UnixMilli(ms).UTC(), nil
	case len(reply) == 2 && reply[0] == "linked":
		return "", time.Time{}, &LinkedError{Account: reply[1]}
	case len(reply) == 1 && reply[0] == "raced":
		return "", time.Time{}, ErrRaced
	case len(reply) == 1 && reply[0] == "reused":
		return "", time.Time{}, ErrReused
	case len(reply) == 1 && reply[0] == "invalid":
		return "", time.Time{}, ErrInvalid
	}
	return "", time.Time{}, fmt.Errorf("link session: unexpected reply %q", reply)
}

// linkAndWait runs linkScript, a SET of the session's barrier key and
// WAIT on one connection of the session's master
// ([redisconn.WriteAndWait]). The barrier is always written because WAIT
// covers only the writes of its own connection and a repeated link writes
// nothing: with it, the confirmation covers the link however long ago it
// was made. It returns the script's command, which holds the reply or its
// error, and an error wrapping ErrNotReplicated when fewer than
// Settings.Wait.Replicas replicas confirmed, or the error of the barrier
// or the WAIT.
func (s *Store) linkAndWait(ctx context.Context, session string, k []string, a []any) (*redis.Cmd, error) {
	var cmd *redis.Cmd
	var set *redis.StatusCmd
	w := s.set.Wait
	n, err := redisconn.WriteAndWait(ctx, s.rdb, session, w.Replicas, w.Timeout, func(p redis.Pipeliner) {
		cmd = linkScript.Cmd(ctx, k, a...)
		_ = p.Process(ctx, cmd)
		set = p.Set(ctx, session+":barrier", "1", barrierTTL)
	}, linkScript)
	if cmd == nil { // no master to send it to
		cmd = redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd, err
	}
	return cmd, redisconn.Confirmed(n, w.Replicas, w.Timeout, cmp.Or(set.Err(), err))
}

// Revoke ends the session of refresh, if refresh is its current or a
// rotated token; anything else is a no-op. It reports whether a session
// ended. Errors wrap ErrMalformed or a Redis error.
func (s *Store) Revoke(ctx context.Context, refresh string) (bool, error) {
	t, err := parseToken(refresh)
	if err != nil {
		return false, err
	}
	session, used := s.keys(t.id)
	k, a := revokeArgs(session, used, t.hash())
	n, err := revokeScript.Run(ctx, s.rdb, k, a...).Int()
	if err != nil {
		return false, fmt.Errorf("revoke session: %w", err)
	}
	return n == 1, nil
}

// Validate reports whether refresh has the form of a refresh token this
// package issues (an error wrapping ErrMalformed if not), without asking
// Redis whether its session exists.
func Validate(refresh string) error {
	_, err := parseToken(refresh)
	return err
}
