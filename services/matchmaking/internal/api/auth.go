package api

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
)

// MaxDisplayName is the longest display name accepted, in characters.
const MaxDisplayName = auth.MaxDisplayName

// The ErrorInfo reasons (domain fourkingdoms.auth.v1) of the session RPCs.
const (
	ReasonRefreshInvalid = "REFRESH_TOKEN_INVALID"
	ReasonRefreshReused  = "REFRESH_TOKEN_REUSED"
	ReasonRefreshRaced   = "REFRESH_TOKEN_RACED"
	// ReasonAccountRequired: LinkGuest called with a guest's (or a bot's,
	// or a service's) token instead of a provider account's.
	ReasonAccountRequired = "ACCOUNT_REQUIRED"
	// ReasonGuestLinked: LinkGuest for a guest linked to another account.
	ReasonGuestLinked = "GUEST_ALREADY_LINKED"
)

// PublicAuthMethods are the AuthService methods callable without a
// token (server.Options.PublicMethods): signing in, and the session RPCs,
// whose refresh token is the proof (the player token may have expired).
func PublicAuthMethods() []string {
	return []string{
		authv1.AuthService_GuestLogin_FullMethodName,
		authv1.AuthService_RefreshSession_FullMethodName,
		authv1.AuthService_RevokeSession_FullMethodName,
		authv1.AuthService_SetDisplayName_FullMethodName,
	}
}

// Sessions keeps the refresh tokens (sessions.Store).
type Sessions interface {
	Create(ctx context.Context, sess sessions.Session, now time.Time) (string, time.Time, error)
	Rotate(ctx context.Context, refresh string, now time.Time, rename string) (sessions.Session, string, time.Time, error)
	Revoke(ctx context.Context, refresh string) (bool, error)
	Link(ctx context.Context, refresh, account string, now time.Time) (string, time.Time, error)
}

// Links publishes the PlayerLinked events of LinkGuest (LinkStream).
type Links interface {
	Publish(ctx context.Context, ev *eventsv1.PlayerLinked) error
}

// Auth implements authv1.AuthServiceServer: guest logins and their
// sessions.
type Auth struct {
	authv1.UnimplementedAuthServiceServer

	keys     *auth.KeySet
	ttl      time.Duration
	sessions Sessions
	links    Links
	log      *slog.Logger
	now      func() time.Time
}

// NewAuth returns the auth API signing tokens valid for ttl with keys,
// which must hold a private key, keeping refresh tokens in sessions and
// publishing links of guests to accounts to links.
func NewAuth(keys *auth.KeySet, ttl time.Duration, sessions Sessions, links Links, log *slog.Logger) (*Auth, error) {
	if !keys.CanSign() {
		return nil, fmt.Errorf("guest login: %w", auth.ErrCannotSign)
	}
	return &Auth{keys: keys, ttl: ttl, sessions: sessions, links: links, log: log, now: time.Now}, nil
}

var guestEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// GuestLogin implements AuthService.GuestLogin: a new guest player id, the
// display name (given, or "Guest-XXXX"), and a signed player token.
func (a *Auth) GuestLogin(ctx context.Context, req *authv1.GuestLoginRequest) (*authv1.GuestLoginResponse, error) {
	name := strings.TrimSpace(req.GetDisplayName())
	if err := checkDisplayName(name); err != nil {
		return nil, rpcerr.Auth.Invalid(reasonInvalid, rpcerr.Field(nil, "display_name", err.Error()), "display_name")
	}
	var b [10]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	suffix := guestEncoding.EncodeToString(b[:])
	playerID := "g-" + strings.ToLower(suffix)
	if name == "" {
		name = "Guest-" + suffix[:4]
	}
	now := a.now()
	token, exp, err := a.sign(playerID, name, now)
	if err != nil {
		return nil, err
	}
	refresh, refreshExp, err := a.sessions.Create(ctx, sessions.Session{PlayerID: playerID, DisplayName: name}, now)
	if err != nil {
		return nil, redisconn.Status(ctx, a.log, err, rpcerr.Auth, "session storage", "player", playerID)
	}
	return &authv1.GuestLoginResponse{
		PlayerId:         playerID,
		DisplayName:      name,
		Token:            token,
		ExpiresAt:        timestamppb.New(exp),
		RefreshToken:     refresh,
		RefreshExpiresAt: timestamppb.New(refreshExp),
	}, nil
}

func (a *Auth) sign(playerID, name string, now time.Time) (string, time.Time, error) {
	token, exp, err := a.keys.Sign(auth.Identity{Subject: playerID, Role: auth.RolePlayer, DisplayName: name}, now, a.ttl)
	if err != nil {
		a.log.Error("cannot sign tokens", "err", err)
		return "", time.Time{}, rpcerr.Auth.Error(codes.Internal, redisconn.ReasonInternal, "internal error: cannot sign tokens", nil)
	}
	return token, exp, nil
}

// RefreshSession implements AuthService.RefreshSession: a new player
// token for the session's player and the session's next refresh token.
func (a *Auth) RefreshSession(ctx context.Context, req *authv1.RefreshSessionRequest) (*authv1.RefreshSessionResponse, error) {
	return a.renew(ctx, req.GetRefreshToken(), "")
}

// renew rotates a session's refresh token (renaming its player when name
// is set) and signs a new player token for it: RefreshSession and
// SetDisplayName answer with the same fields.
func (a *Auth) renew(ctx context.Context, refreshToken, name string) (*authv1.RefreshSessionResponse, error) {
	now := a.now()
	sess, refresh, refreshExp, err := a.sessions.Rotate(ctx, refreshToken, now, name)
	if err != nil {
		return nil, a.sessionStatus(ctx, err)
	}
	token, exp, err := a.sign(sess.PlayerID, sess.DisplayName, now)
	if err != nil {
		return nil, err
	}
	return &authv1.RefreshSessionResponse{
		PlayerId:         sess.PlayerID,
		DisplayName:      sess.DisplayName,
		Token:            token,
		ExpiresAt:        timestamppb.New(exp),
		RefreshToken:     refresh,
		RefreshExpiresAt: timestamppb.New(refreshExp),
	}, nil
}

// SetDisplayName implements AuthService.SetDisplayName: RefreshSession
// that also renames the session's player.
func (a *Auth) SetDisplayName(ctx context.Context, req *authv1.SetDisplayNameRequest) (*authv1.SetDisplayNameResponse, error) {
	name := strings.TrimSpace(req.GetDisplayName())
	err := checkDisplayName(name)
	switch {
	case err != nil:
	case name == "":
		err = errors.New("must not be empty")
	case impersonatesBot(name):
		err = fmt.Errorf("names starting with %q are reserved for the bots", "Bot ")
	}
	if err != nil {
		return nil, rpcerr.Auth.Invalid(reasonInvalid, rpcerr.Field(nil, "display_name", err.Error()), "display_name")
	}
	r, err := a.renew(ctx, req.GetRefreshToken(), name)
	if err != nil {
		return nil, err
	}
	return &authv1.SetDisplayNameResponse{
		PlayerId: r.GetPlayerId(), DisplayName: r.GetDisplayName(), Token: r.GetToken(), ExpiresAt: r.GetExpiresAt(),
		RefreshToken: r.GetRefreshToken(), RefreshExpiresAt: r.GetRefreshExpiresAt(),
	}, nil
}

// impersonatesBot reports whether name reads as one of the bots' names
// ("Bot Greedy 4", cmd/internal/botpool): players must be able to tell a
// bot from a person at the table. GuestLogin does not check it, since
// cmd/bots signs its bots in as guests with exactly those names.
func impersonatesBot(name string) bool {
	f := strings.Fields(name)
	return len(f) > 0 && (strings.EqualFold(f[0], "bot") || strings.HasPrefix(strings.ToLower(f[0]), "bot-"))
}

// RevokeSession implements AuthService.RevokeSession.
func (a *Auth) RevokeSession(ctx context.Context, req *authv1.RevokeSessionRequest) (*authv1.RevokeSessionResponse, error) {
	if _, err := a.sessions.Revoke(ctx, req.GetRefreshToken()); err != nil {
		return nil, a.sessionStatus(ctx, err)
	}
	return &authv1.RevokeSessionResponse{}, nil
}

// LinkGuest implements AuthService.LinkGuest: the caller, an account of
// the OpenID Connect provider, takes over the guest whose refresh token
// the request carries. The session is marked linked first and the event
// published after: should publishing fail, the call fails with
// UNAVAILABLE and the client's retry (the same token, the same account:
// Link answers as the first time) publishes it again; the rating service
// applies a link once however often it is published. With
// MM_WAIT_REPLICAS the link is confirmed by replicas before the event is
// published, and the event before the client is answered: a link the
// client was told of survives a failover of either master, and no event
// is published for a link a failover could still take back.
func (a *Auth) LinkGuest(ctx context.Context, req *authv1.LinkGuestRequest) (*authv1.LinkGuestResponse, error) {
	if err := auth.RequireRole(ctx, auth.RolePlayer); err != nil {
		return nil, err
	}
	id, _ := auth.FromContext(ctx)
	if !id.Account {
		return nil, rpcerr.Auth.Error(codes.PermissionDenied, ReasonAccountRequired,
			"LinkGuest needs the access token of an account at the OpenID Connect provider as authorization; this token is a guest's, a bot's or the deployment's own", nil)
	}
	guest, linkedAt, err := a.sessions.Link(ctx, req.GetRefreshToken(), id.Subject, a.now())
	var linked *sessions.LinkedError
	if errors.As(err, &linked) {
		return nil, rpcerr.Auth.Error(codes.FailedPrecondition, ReasonGuestLinked,
			"this guest is linked to another account already; a guest can be linked once", nil)
	}
	if errors.Is(err, sessions.ErrNotReplicated) {
		return nil, a.notReplicated(ctx, err, id.Subject)
	}
	if err != nil {
		return nil, a.sessionStatus(ctx, err)
	}
	ev := &eventsv1.PlayerLinked{
		GuestPlayerId: guest, AccountPlayerId: id.Subject, AccountDisplayName: id.DisplayName, LinkedAt: timestamppb.New(linkedAt),
	}
	if err := a.links.Publish(ctx, ev); err != nil {
		if errors.Is(err, sessions.ErrNotReplicated) {
			return nil, a.notReplicated(ctx, err, id.Subject)
		}
		return nil, redisconn.Status(ctx, a.log, err, rpcerr.Auth, "link stream", "player", guest, "account", id.Subject)
	}
	a.log.InfoContext(ctx, "guest linked to account", "player", guest, "account", id.Subject)
	return &authv1.LinkGuestResponse{PlayerId: id.Subject, GuestPlayerId: guest, LinkedAt: timestamppb.New(linkedAt)}, nil
}

// notReplicated is LinkGuest's answer to a link or event that too few
// replicas confirmed (MM_WAIT_REPLICAS): UNAVAILABLE, as a store that is
// down, so that the client retries with the same refresh token.
func (a *Auth) notReplicated(ctx context.Context, err error, account string) error {
	if ctx.Err() != nil { // the caller gave up during the WAIT
		return redisconn.Status(ctx, a.log, ctx.Err(), rpcerr.Auth, "session storage")
	}
	a.log.WarnContext(ctx, "guest link not confirmed by the replicas", "account", account, "err", err)
	return rpcerr.Auth.Error(codes.Unavailable, redisconn.ReasonUnavailable,
		"the link was not confirmed by the session storage's replicas in time: retry with backoff, with the same refresh token (a retry is safe)", nil)
}

// sessionStatus is the error table of the session RPCs.
func (a *Auth) sessionStatus(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, sessions.ErrMalformed):
		desc := err.Error() + ": send the refresh_token of the last GuestLogin or RefreshSession as it is"
		return rpcerr.Auth.Invalid(reasonInvalid, rpcerr.Field(nil, "refresh_token", desc), "refresh_token")
	case errors.Is(err, sessions.ErrInvalid):
		return rpcerr.Auth.Error(codes.Unauthenticated, ReasonRefreshInvalid,
			"refresh token unknown, expired or revoked: sign in again (GuestLogin makes a new player)", nil)
	case errors.Is(err, sessions.ErrReused):
		return rpcerr.Auth.Error(codes.Unauthenticated, ReasonRefreshReused,
			"refresh token already used once: a copy of it may be in other hands, so the session is revoked; sign in again", nil)
	case errors.Is(err, sessions.ErrRaced):
		return rpcerr.Auth.Error(codes.Aborted, ReasonRefreshRaced,
			"refresh token rotated a moment ago by another request of this session: use the newest refresh token", nil)
	}
	return redisconn.Status(ctx, a.log, err, rpcerr.Auth, "session storage")
}

func checkDisplayName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxDisplayName {
		return fmt.Errorf("at most %d characters, got %d", MaxDisplayName, n)
	}
	for _, r := range name {
		if unicode.IsControl(r) || (!unicode.IsPrint(r) && r != ' ') {
			return fmt.Errorf("control or invisible characters are not allowed")
		}
	}
	return nil
}
