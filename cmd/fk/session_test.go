package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// fakeServices answers RefreshSession, RevokeSession and GetRating (as
// "not rated yet") on one loopback port, and records what fk sent.
type fakeServices struct {
	authv1.UnimplementedAuthServiceServer
	ratingv1.UnimplementedRatingServiceServer

	refreshErr error // answer to RefreshSession; nil: new tokens

	mu        sync.Mutex
	refreshed []string // refresh tokens received
	revoked   []string
	bearer    []string // authorization of each GetRating
	linked    []string // "<authorization> <refresh token>" of each LinkGuest
}

func (f *fakeServices) RefreshSession(_ context.Context, req *authv1.RefreshSessionRequest) (*authv1.RefreshSessionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshed = append(f.refreshed, req.GetRefreshToken())
	if f.refreshErr != nil {
		return nil, f.refreshErr
	}
	return &authv1.RefreshSessionResponse{
		PlayerId: "g-same", DisplayName: "Same", Token: "token-2", ExpiresAt: timestamppb.New(time.Now().Add(time.Hour)),
		RefreshToken: "refresh-2", RefreshExpiresAt: timestamppb.New(time.Now().Add(90 * 24 * time.Hour)),
	}, nil
}

func (f *fakeServices) RevokeSession(_ context.Context, req *authv1.RevokeSessionRequest) (*authv1.RevokeSessionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, req.GetRefreshToken())
	return &authv1.RevokeSessionResponse{}, nil
}

func (f *fakeServices) SetDisplayName(_ context.Context, req *authv1.SetDisplayNameRequest) (*authv1.SetDisplayNameResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshed = append(f.refreshed, req.GetRefreshToken())
	if req.GetDisplayName() == "Bot X" {
		return nil, status.Error(codes.InvalidArgument, "display_name: names starting with \"Bot \" are reserved for the bots")
	}
	return &authv1.SetDisplayNameResponse{
		PlayerId: "g-same", DisplayName: req.GetDisplayName(), Token: "token-2", ExpiresAt: timestamppb.New(time.Now().Add(time.Hour)),
		RefreshToken: "refresh-2", RefreshExpiresAt: timestamppb.New(time.Now().Add(90 * 24 * time.Hour)),
	}, nil
}

func (f *fakeServices) LinkGuest(ctx context.Context, req *authv1.LinkGuestRequest) (*authv1.LinkGuestResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.linked = append(f.linked, strings.Join(metadata.ValueFromIncomingContext(ctx, "authorization"), ",")+" "+req.GetRefreshToken())
	if req.GetRefreshToken() != "refresh-1" {
		return nil, status.Error(codes.Unauthenticated, "refresh token unknown, expired or revoked")
	}
	return &authv1.LinkGuestResponse{PlayerId: "o-acct", GuestPlayerId: "g-same", LinkedAt: timestamppb.Now()}, nil
}

func (f *fakeServices) GetRating(ctx context.Context, _ *ratingv1.GetRatingRequest) (*ratingv1.GetRatingResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bearer = append(f.bearer, metadata.ValueFromIncomingContext(ctx, "authorization")...)
	return nil, status.Error(codes.NotFound, "no rating")
}

// startFake serves f and returns fk's environment pointing at it, with a
// fresh home holding s.
func startFake(t *testing.T, f *fakeServices, s session) (env func(string) string, home string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	authv1.RegisterAuthServiceServer(srv, f)
	ratingv1.RegisterRatingServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	home = t.TempDir()
	if err := saveSession(home, s); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"FK_HOME": home, "FK_MATCHMAKING_ADDR": lis.Addr().String(), "FK_MATCH_ADDR": lis.Addr().String(), "FK_RATING_ADDR": lis.Addr().String()}
	return func(k string) string { return vars[k] }, home
}

func expiredSession() session {
	return session{
		PlayerID: "g-same", DisplayName: "Same", Token: "token-1", ExpiresAt: time.Now().Add(-time.Minute),
		RefreshToken: "refresh-1", RefreshExpiresAt: time.Now().Add(time.Hour),
	}
}

// TestExpiredTokenIsRenewed runs a command with an expired player token:
// fk renews it with the refresh token (not a new guest login), saves the
// renewed session with mode 0600 and makes the call with the new token.
func TestExpiredTokenIsRenewed(t *testing.T) {
	t.Parallel()
	f := &fakeServices{}
	env, home := startFake(t, f, expiredSession())
	var out bytes.Buffer
	if err := run(t.Context(), []string{"rating"}, env, strings.NewReader(""), &out); err != nil {
		t.Fatalf("fk rating: %v", err)
	}
	if len(f.refreshed) != 1 || f.refreshed[0] != "refresh-1" {
		t.Fatalf("RefreshSession calls %q, want one with refresh-1", f.refreshed)
	}
	if len(f.bearer) != 1 || f.bearer[0] != "Bearer token-2" {
		t.Fatalf("GetRating sent %q, want the renewed token", f.bearer)
	}
	s, err := loadSession(home)
	if err != nil {
		t.Fatal(err)
	}
	if s.PlayerID != "g-same" || s.Token != "token-2" || s.RefreshToken != "refresh-2" || s.stale(time.Now()) {
		t.Fatalf("saved session %+v, want the renewed one", s)
	}
	info, err := os.Stat(sessionPath(home))
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("session file mode %v, want 0600", mode)
	}

	// Now fresh: the next command renews nothing.
	if err := run(t.Context(), []string{"rating"}, env, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	if len(f.refreshed) != 1 {
		t.Errorf("a fresh token was renewed again: %q", f.refreshed)
	}
}

func TestEndedSessionAsksToLogIn(t *testing.T) {
	t.Parallel()
	f := &fakeServices{refreshErr: status.Error(codes.Unauthenticated, "refresh token unknown, expired or revoked")}
	env, home := startFake(t, f, expiredSession())
	err := run(t.Context(), []string{"rating"}, env, strings.NewReader(""), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "fk login") || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("fk rating with a revoked session: %v, want the server's reason and a hint to log in", err)
	}
	if s, _ := loadSession(home); s.Token != "token-1" {
		t.Errorf("session file changed to %+v", s)
	}
	if len(f.bearer) != 0 {
		t.Errorf("GetRating called with %q after the refresh failed", f.bearer)
	}
}

func TestRefreshTokenExpiredToo(t *testing.T) {
	t.Parallel()
	s := expiredSession()
	s.RefreshExpiresAt = time.Now().Add(-time.Minute)
	env, _ := startFake(t, &fakeServices{}, s)
	err := run(t.Context(), []string{"rating"}, env, strings.NewReader(""), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "fk login") {
		t.Fatalf("fk rating with both tokens expired: %v, want a hint to log in", err)
	}
}

func TestLogout(t *testing.T) {
	t.Parallel()
	f := &fakeServices{}
	env, home := startFake(t, f, expiredSession())
	var out bytes.Buffer
	if err := run(t.Context(), []string{"logout"}, env, strings.NewReader(""), &out); err != nil {
		t.Fatalf("fk logout: %v", err)
	}
	if len(f.revoked) != 1 || f.revoked[0] != "refresh-1" {
		t.Errorf("RevokeSession calls %q, want one with refresh-1", f.revoked)
	}
	if _, err := os.Stat(sessionPath(home)); !os.IsNotExist(err) {
		t.Errorf("session file after logout: %v, want it gone", err)
	}
	if !strings.Contains(out.String(), "signed out Same") {
		t.Errorf("output %q", out.String())
	}
}

func TestRename(t *testing.T) {
	t.Parallel()
	f := &fakeServices{}
	env, home := startFake(t, f, expiredSession())
	var out bytes.Buffer
	if err := run(t.Context(), []string{"rename", "New Name"}, env, strings.NewReader(""), &out); err != nil {
		t.Fatalf("fk rename: %v", err)
	}
	s, err := loadSession(home)
	if err != nil || s.DisplayName != "New Name" || s.Token != "token-2" || s.RefreshToken != "refresh-2" {
		t.Fatalf("session after rename = %+v, %v", s, err)
	}
	if len(f.refreshed) != 1 || f.refreshed[0] != "refresh-1" {
		t.Errorf("SetDisplayName sent %q, want refresh-1", f.refreshed)
	}
	err = run(t.Context(), []string{"rename", "Bot X"}, env, strings.NewReader(""), &out)
	if err == nil || !strings.Contains(explain(err), "reserved for the bots") {
		t.Fatalf("fk rename to a bot's name: %v", err)
	}
	if s2, _ := loadSession(home); s2 != s {
		t.Errorf("a refused rename changed the session to %+v", s2)
	}
}

// TestLink links the signed-in guest with an access token from a file:
// fk sends it as the authorization and the refresh token as the proof,
// and keeps the account's token as its session; a refused link leaves the
// session as it was.
func TestLink(t *testing.T) {
	t.Parallel()
	f := &fakeServices{}
	env, home := startFake(t, f, expiredSession())
	var out bytes.Buffer
	if err := run(t.Context(), []string{"link"}, env, strings.NewReader(""), &out); err == nil || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("fk link without a token: %v, want a hint to give one", err)
	}
	file := home + "/idp-token"
	if err := os.WriteFile(file, []byte("acct-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"link", "--token-file", file}, env, strings.NewReader(""), &out); err != nil {
		t.Fatalf("fk link: %v", err)
	}
	if len(f.linked) != 1 || f.linked[0] != "Bearer acct-token refresh-1" {
		t.Errorf("LinkGuest calls %q, want one with the account's token and refresh-1", f.linked)
	}
	s, err := loadSession(home)
	if err != nil || s.PlayerID != "o-acct" || s.Token != "acct-token" || s.RefreshToken != "" {
		t.Fatalf("session after the link = %+v, %v; want the account's", s, err)
	}
	if !strings.Contains(out.String(), "linked guest Same (g-same) to account o-acct") {
		t.Errorf("output %q", out.String())
	}
	if err := run(t.Context(), []string{"link", "--token", "x"}, env, strings.NewReader(""), &out); err == nil || !strings.Contains(err.Error(), "not a guest") {
		t.Fatalf("fk link as the account: %v, want a refusal before any call", err)
	}

	env, home = startFake(t, f, session{PlayerID: "g-other", Token: "t", RefreshToken: "stale"})
	err = run(t.Context(), []string{"link", "--token", "acct-token"}, env, strings.NewReader(""), &out)
	if err == nil || !strings.Contains(explain(err), "revoked") {
		t.Fatalf("fk link refused: %v", err)
	}
	if s, _ := loadSession(home); s.PlayerID != "g-other" || s.RefreshToken != "stale" {
		t.Errorf("a refused link changed the session to %+v", s)
	}
}
