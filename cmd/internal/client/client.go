// Package client is the plumbing the terminal client and the bots share: one
// gRPC connection per service with the player's token, the queue wait, and
// following a match over WatchMatch with reconnection from the last version
// seen.
//
// Everything here goes through the public API only (AuthService,
// MatchmakingService, MatchService, RatingService), so a bot exercises
// exactly what a person's client does.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// Endpoints are the gRPC addresses of the services (host:port) and how to
// reach them.
type Endpoints struct {
	// Matchmaking serves AuthService and MatchmakingService.
	Matchmaking string
	// Match serves MatchService.
	Match string
	// Rating serves RatingService.
	Rating string
	// TLS, when set, secures the connections (the services' default, see
	// pkg/servicetls); nil dials plaintext, as `make run` serves on loopback.
	TLS *tls.Config
}

// Validate reports a missing address.
func (e Endpoints) Validate() error {
	if e.Matchmaking == "" || e.Match == "" || e.Rating == "" {
		return fmt.Errorf("service addresses: matchmaking %q, match %q, rating %q: all are required", e.Matchmaking, e.Match, e.Rating)
	}
	return nil
}

// Client holds one connection per service. Calls carry the token set with
// SetToken (none before: only GuestLogin works then). The connections are
// plaintext unless Endpoints.TLS is set: the local cluster listens on
// loopback.
type Client struct {
	Auth        authv1.AuthServiceClient
	Matchmaking matchmakingv1.MatchmakingServiceClient
	Match       matchv1.MatchServiceClient
	Rating      ratingv1.RatingServiceClient

	creds *tokenCreds
	conns []*grpc.ClientConn
}

// Dial connects to the services; it does not wait for them (gRPC connects
// on the first call and reconnects on its own).
func Dial(ep Endpoints) (*Client, error) {
	if err := ep.Validate(); err != nil {
		return nil, err
	}
	c := &Client{creds: &tokenCreds{}}
	transport := insecure.NewCredentials()
	if ep.TLS != nil {
		transport = credentials.NewTLS(ep.TLS)
	}
	dial := func(service, addr string) (*grpc.ClientConn, error) {
		opts := append([]grpc.DialOption{
			grpc.WithTransportCredentials(transport),
			grpc.WithPerRPCCredentials(c.creds),
		}, markUnreachable(service, addr)...)
		cc, err := grpc.NewClient(addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		c.conns = append(c.conns, cc)
		return cc, nil
	}
	mm, err := dial("matchmaking", ep.Matchmaking)
	if err != nil {
		return nil, err
	}
	m, err := dial("match", ep.Match)
	if err != nil {
		c.Close()
		return nil, err
	}
	r, err := dial("rating", ep.Rating)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Auth = authv1.NewAuthServiceClient(mm)
	c.Matchmaking = matchmakingv1.NewMatchmakingServiceClient(mm)
	c.Match = matchv1.NewMatchServiceClient(m)
	c.Rating = ratingv1.NewRatingServiceClient(r)
	return c, nil
}

// SetToken sets the token sent with every later call.
func (c *Client) SetToken(token string) { c.creds.set(token) }

// Close closes the connections.
func (c *Client) Close() error {
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// Login signs in a new guest, uses its token from now on and returns the
// identity.
func (c *Client) Login(ctx context.Context, displayName string) (*authv1.GuestLoginResponse, error) {
	resp, err := c.Auth.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: displayName})
	if err != nil {
		return nil, fmt.Errorf("guest login: %w", err)
	}
	c.SetToken(resp.GetToken())
	return resp, nil
}

// Refresh trades a guest's refresh token for a new player token of the
// same player (and the next refresh token), uses the new token from now on
// and returns the session's new state. The refresh token sent stops
// working: keep the returned one.
func (c *Client) Refresh(ctx context.Context, refreshToken string) (*authv1.RefreshSessionResponse, error) {
	resp, err := c.Auth.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: refreshToken})
	if err != nil {
		return nil, fmt.Errorf("refresh session: %w", err)
	}
	c.SetToken(resp.GetToken())
	return resp, nil
}

// tokenCreds sends the current token, if any. The connections are on
// loopback or behind a TLS-terminating proxy, so it does not require
// transport security.
type tokenCreds struct {
	mu    sync.Mutex
	token string
}

func (t *tokenCreds) set(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.token = token
}

func (t *tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == "" {
		return nil, nil
	}
	return map[string]string{auth.MetadataKey: "Bearer " + t.token}, nil
}

func (t *tokenCreds) RequireTransportSecurity() bool { return false }

// retryable reports whether a failed call or stream is worth repeating: the
// server was unreachable, shutting down, or dropped a slow reader.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// backoff is an exponential delay between reconnection attempts.
type backoff struct{ next time.Duration }

// wait sleeps for the next delay (100ms doubling to 2s) or until ctx ends.
func (b *backoff) wait(ctx context.Context) error {
	if b.next == 0 {
		b.next = 100 * time.Millisecond
	}
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, 2*time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (b *backoff) reset() { b.next = 0 }
