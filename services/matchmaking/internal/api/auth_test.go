package api

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
)

// TestGuestComesBack signs a guest in, lets it come back with its
// refresh token (no player token needed), play as the same player, and
// sign out.
func TestGuestComesBack(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		login := h.guest(t, "Returner")
		if !strings.HasPrefix(login.GetRefreshToken(), "fks1.") {
			t.Fatalf("GuestLogin refresh token %q", login.GetRefreshToken())
		}
		if d := time.Until(login.GetRefreshExpiresAt().AsTime()); d < sessions.DefaultSettings().TTL-time.Minute || d > sessions.DefaultSettings().TTL {
			t.Errorf("refresh token expires in %v, want about %v", d, sessions.DefaultSettings().TTL)
		}
		back, err := h.auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: login.GetRefreshToken()})
		if err != nil {
			t.Fatalf("RefreshSession: %v", err)
		}
		if back.GetPlayerId() != login.GetPlayerId() || back.GetDisplayName() != "Returner" ||
			back.GetRefreshToken() == login.GetRefreshToken() || back.GetToken() == "" {
			t.Fatalf("RefreshSession = %v after login %v", back, login)
		}
		id, err := h.keys.Verify(back.GetToken(), time.Now())
		if err != nil || id.Subject != login.GetPlayerId() || id.DisplayName != "Returner" {
			t.Fatalf("refreshed token identity = %+v, %v", id, err)
		}
		ticket, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(back.GetToken()))
		if err != nil {
			t.Fatalf("Enqueue with the refreshed token: %v", err)
		}
		got, err := h.store.Ticket(ctx, ticket.GetTicket().GetTicketId())
		if err != nil || got.PlayerID != login.GetPlayerId() {
			t.Fatalf("ticket of %q, %v; want the guest's", got.PlayerID, err)
		}

		if _, err := h.auth.RevokeSession(ctx, &authv1.RevokeSessionRequest{RefreshToken: back.GetRefreshToken()}); err != nil {
			t.Fatalf("RevokeSession: %v", err)
		}
		_, err = h.auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: back.GetRefreshToken()})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("refresh after sign-out: %v, want UNAUTHENTICATED", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonRefreshInvalid, "")
		if _, err := h.auth.RevokeSession(ctx, &authv1.RevokeSessionRequest{RefreshToken: back.GetRefreshToken()}); err != nil {
			t.Fatalf("second RevokeSession: %v, want success (signing out twice is no error)", err)
		}
	})
}

// TestSessionRefusals is the refusal table of RefreshSession and
// RevokeSession: code, ErrorInfo, field, and whether the session still
// works afterwards.
func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		refresh := func(tok string) (*authv1.RefreshSessionResponse, error) {
			return h.auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: tok})
		}
		mustRefresh := func(tok string) string {
			t.Helper()
			r, err := refresh(tok)
			if err != nil {
				t.Fatalf("RefreshSession: %v", err)
			}
			return r.GetRefreshToken()
		}
		login := h.guest(t, "")
		parts := strings.Split(login.GetRefreshToken(), ".")
		tests := []struct {
			name   string
			call   func() error
			code   codes.Code
			reason string
			field  string
		}{
			{"refresh: empty", func() error { _, err := refresh(""); return err }, codes.InvalidArgument, "INVALID_ARGUMENT", "refresh_token"},
			{"refresh: a player token instead", func() error { _, err := refresh(login.GetToken()); return err }, codes.InvalidArgument, "INVALID_ARGUMENT", "refresh_token"},
			{"refresh: cut short", func() error { _, err := refresh(login.GetRefreshToken()[:40]); return err }, codes.InvalidArgument, "INVALID_ARGUMENT", "refresh_token"},
			{"refresh: unknown session", func() error {
				_, err := refresh("fks1." + strings.Repeat("a", 26) + "." + parts[2])
				return err
			}, codes.Unauthenticated, ReasonRefreshInvalid, ""},
			{"refresh: wrong secret", func() error {
				_, err := refresh(parts[0] + "." + parts[1] + "." + strings.Repeat("A", 43))
				return err
			}, codes.Unauthenticated, ReasonRefreshInvalid, ""},
			{"revoke: empty", func() error {
				_, err := h.auth.RevokeSession(ctx, &authv1.RevokeSessionRequest{})
				return err
			}, codes.InvalidArgument, "INVALID_ARGUMENT", "refresh_token"},
		}
		for _, tt := range tests {
			err := tt.call()
			if status.Code(err) != tt.code {
				t.Errorf("%s: %v, want %v", tt.name, err, tt.code)
				continue
			}
			checkRefusal(t, err, "fourkingdoms.auth.v1/"+tt.reason, tt.field)
		}
		// None of them touched the session.
		second := mustRefresh(login.GetRefreshToken())

		// The token just rotated, sent again at once: a race, not a theft;
		// the session goes on.
		_, err := refresh(login.GetRefreshToken())
		if status.Code(err) != codes.Aborted {
			t.Fatalf("rotated token sent again at once: %v, want ABORTED", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonRefreshRaced, "")
		third := mustRefresh(second)

		// An older rotated token: reuse; the session ends for everyone.
		_, err = refresh(login.GetRefreshToken())
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("older rotated token: %v, want UNAUTHENTICATED", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonRefreshReused, "")
		_, err = refresh(third)
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("newest token after a reuse: %v, want UNAUTHENTICATED", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonRefreshInvalid, "")
	})
}

func FuzzRefreshSession(f *testing.F) {
	f.Add("")
	f.Add("fks1." + strings.Repeat("a", 26) + "." + strings.Repeat("A", 43))
	f.Add("fks1.}{.x")
	a := &Auth{sessions: rejectAll{}, log: nil, now: time.Now}
	f.Fuzz(func(t *testing.T, tok string) {
		_, err := a.RefreshSession(context.Background(), &authv1.RefreshSessionRequest{RefreshToken: tok})
		if c := status.Code(err); c != codes.InvalidArgument && c != codes.Unauthenticated {
			t.Fatalf("RefreshSession(%q) = %v", tok, err)
		}
	})
}

// rejectAll is a session store that knows no session, for fuzzing the
// handler's validation without Redis.
type rejectAll struct{}

func (rejectAll) Create(context.Context, sessions.Session, time.Time) (string, time.Time, error) {
	return "", time.Time{}, sessions.ErrInvalid
}

func (rejectAll) Rotate(_ context.Context, refresh string, _ time.Time, _ string) (sessions.Session, string, time.Time, error) {
	if err := sessions.Validate(refresh); err != nil {
		return sessions.Session{}, "", time.Time{}, err
	}
	return sessions.Session{}, "", time.Time{}, sessions.ErrInvalid
}

func (rejectAll) Revoke(context.Context, string) (bool, error) { return false, nil }

func (rejectAll) Link(_ context.Context, refresh, _ string, _ time.Time) (string, time.Time, error) {
	if err := sessions.Validate(refresh); err != nil {
		return "", time.Time{}, err
	}
	return "", time.Time{}, sessions.ErrInvalid
}

// TestSetDisplayName renames a guest: the answer's token carries the new
// name, later refreshes keep it, the old refresh token is rotated away,
// and bad names change nothing.
func TestSetDisplayName(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		login := h.guest(t, "Before")
		for _, tt := range []struct{ name, why string }{
			{"", "empty"},
			{"   ", "empty"},
			{strings.Repeat("x", 33), "at most 32"},
			{"tab\there", "control"},
			{"Bot Greedy 4", "reserved for the bots"},
			{"bot-greedy-4", "reserved for the bots"},
			{" BOT  x", "reserved for the bots"},
		} {
			_, err := h.auth.SetDisplayName(ctx, &authv1.SetDisplayNameRequest{RefreshToken: login.GetRefreshToken(), DisplayName: tt.name})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("SetDisplayName(%q) = %v, want INVALID_ARGUMENT saying %q", tt.name, err, tt.why)
				continue
			}
			checkRefusal(t, err, "fourkingdoms.auth.v1/INVALID_ARGUMENT", "display_name")
		}
		// None of the refusals rotated the token.
		renamed, err := h.auth.SetDisplayName(ctx, &authv1.SetDisplayNameRequest{RefreshToken: login.GetRefreshToken(), DisplayName: " Botanist "})
		if err != nil {
			t.Fatalf("SetDisplayName: %v", err)
		}
		if renamed.GetPlayerId() != login.GetPlayerId() || renamed.GetDisplayName() != "Botanist" || renamed.GetRefreshToken() == login.GetRefreshToken() {
			t.Fatalf("SetDisplayName = %v", renamed)
		}
		if id, err := h.keys.Verify(renamed.GetToken(), time.Now()); err != nil || id.DisplayName != "Botanist" || id.Subject != login.GetPlayerId() {
			t.Fatalf("renamed token identity = %+v, %v", id, err)
		}
		back, err := h.auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: renamed.GetRefreshToken()})
		if err != nil || back.GetDisplayName() != "Botanist" {
			t.Fatalf("refresh after the rename = %v, %v; want the new name", back, err)
		}
		_, err = h.auth.SetDisplayName(ctx, &authv1.SetDisplayNameRequest{RefreshToken: "", DisplayName: "Fine"})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("SetDisplayName without a refresh token: %v, want INVALID_ARGUMENT", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/INVALID_ARGUMENT", "refresh_token")
	})
}

// links returns the PlayerLinked events published so far.
func (h *harness) linkEvents(t *testing.T) []string {
	t.Helper()
	msgs, err := h.rdb.XRange(context.Background(), h.links, "-", "+").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		ev, err := eventstream.PlayerLinked().Decode(m.Values)
		if err != nil {
			t.Fatalf("link event %s: %v", m.ID, err)
		}
		out = append(out, ev.GetGuestPlayerId()+" -> "+ev.GetAccountPlayerId()+" ("+ev.GetAccountDisplayName()+")")
	}
	return out
}

// TestLinkGuest links a guest to a provider account: the answer names
// both, a PlayerLinked event is published, the guest's refresh token
// stops working, and the same call again succeeds with the same answer
// (publishing again: the rating service applies a link once).
func TestLinkGuest(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		login := h.guest(t, "Before")
		acct := h.idp.Token(t, "link-1", "Linked Account", time.Hour)
		want := auth.OIDCPlayerID(h.idp.Issuer, "link-1")
		req := &authv1.LinkGuestRequest{RefreshToken: login.GetRefreshToken()}
		got, err := h.auth.LinkGuest(ctx, req, as(acct))
		if err != nil {
			t.Fatalf("LinkGuest: %v", err)
		}
		if got.GetPlayerId() != want || got.GetGuestPlayerId() != login.GetPlayerId() || !got.GetLinkedAt().IsValid() {
			t.Fatalf("LinkGuest = %v, want account %s and guest %s", got, want, login.GetPlayerId())
		}
		wantEvent := login.GetPlayerId() + " -> " + want + " (Linked Account)"
		if ev := h.linkEvents(t); len(ev) != 1 || ev[0] != wantEvent {
			t.Fatalf("link events %q, want [%q]", ev, wantEvent)
		}
		_, err = h.auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: login.GetRefreshToken()})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("refresh of a linked guest: %v, want UNAUTHENTICATED", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonRefreshInvalid, "")
		again, err := h.auth.LinkGuest(ctx, req, as(h.idp.Token(t, "link-1", "Linked Account", time.Hour)))
		if err != nil || again.GetPlayerId() != want || !again.GetLinkedAt().AsTime().Equal(got.GetLinkedAt().AsTime()) {
			t.Fatalf("LinkGuest again = %v, %v; want the first answer %v", again, err, got)
		}
		if ev := h.linkEvents(t); len(ev) != 2 || ev[1] != wantEvent {
			t.Fatalf("link events after the retry %q, want the event twice", ev)
		}
	})
}

// TestLinkGuestRefusals is the refusal table of LinkGuest: code,
// ErrorInfo, field, and that the guest's session still works (and no
// event was published) afterwards, except where the refusal ends it.
func TestLinkGuestRefusals(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		login := h.guest(t, "")
		acct := as(h.idp.Token(t, "refusals", "Acct", time.Hour))
		link := func(tok string, opt grpc.CallOption) error {
			_, err := h.auth.LinkGuest(ctx, &authv1.LinkGuestRequest{RefreshToken: tok}, opt)
			return err
		}
		parts := strings.Split(login.GetRefreshToken(), ".")
		tests := []struct {
			name   string
			err    error
			code   codes.Code
			reason string
			field  string
		}{
			{"no token", link(login.GetRefreshToken(), grpc.EmptyCallOption{}), codes.Unauthenticated, auth.ReasonMissingToken, ""},
			{"a guest's token", link(login.GetRefreshToken(), as(login.GetToken())), codes.PermissionDenied, ReasonAccountRequired, ""},
			{"a deployment token with an account-like id", link(login.GetRefreshToken(), as(h.token(t, auth.Identity{Subject: auth.OIDCPlayerID(h.idp.Issuer, "refusals"), Role: auth.RolePlayer}))), codes.PermissionDenied, ReasonAccountRequired, ""},
			{"a service", link(login.GetRefreshToken(), as(h.token(t, auth.Identity{Subject: "matchmaker", Role: auth.RoleService}))), codes.PermissionDenied, "ROLE_NOT_ALLOWED", ""},
			{"empty refresh token", link("", acct), codes.InvalidArgument, "INVALID_ARGUMENT", "refresh_token"},
			{"a player token instead", link(login.GetToken(), acct), codes.InvalidArgument, "INVALID_ARGUMENT", "refresh_token"},
			{"unknown session", link("fks1."+strings.Repeat("a", 26)+"."+parts[2], acct), codes.Unauthenticated, ReasonRefreshInvalid, ""},
			{"wrong secret", link(parts[0]+"."+parts[1]+"."+strings.Repeat("A", 43), acct), codes.Unauthenticated, ReasonRefreshInvalid, ""},
		}
		for _, tt := range tests {
			if status.Code(tt.err) != tt.code {
				t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.code)
				continue
			}
			checkRefusal(t, tt.err, "fourkingdoms.auth.v1/"+tt.reason, tt.field)
		}
		if ev := h.linkEvents(t); len(ev) != 0 {
			t.Fatalf("refusals published %q", ev)
		}
		// None of them touched the session; the rotation makes the
		// login's token a rotated one.
		r, err := h.auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: login.GetRefreshToken()})
		if err != nil {
			t.Fatalf("refresh after the refusals: %v", err)
		}
		err = link(login.GetRefreshToken(), acct)
		if status.Code(err) != codes.Aborted {
			t.Fatalf("a token rotated a moment ago: %v, want ABORTED", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonRefreshRaced, "")

		// Linked to one account, the guest cannot be linked to another.
		if err := link(r.GetRefreshToken(), acct); err != nil {
			t.Fatalf("LinkGuest: %v", err)
		}
		err = link(r.GetRefreshToken(), as(h.idp.Token(t, "someone-else", "Other", time.Hour)))
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("link to a second account: %v, want FAILED_PRECONDITION", err)
		}
		checkRefusal(t, err, "fourkingdoms.auth.v1/"+ReasonGuestLinked, "")
		if ev := h.linkEvents(t); len(ev) != 1 {
			t.Fatalf("link events %q, want only the first link's", ev)
		}
	})
}
