package api

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
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
)

// MaxDisplayName is the longest display name accepted, in characters.
const MaxDisplayName = 32

// Auth implements authv1.AuthServiceServer: guest logins.
type Auth struct {
	authv1.UnimplementedAuthServiceServer

	keys *auth.KeySet
	ttl  time.Duration
	now  func() time.Time
}

// NewAuth returns the auth API signing tokens valid for ttl with keys,
// which must hold a private key.
func NewAuth(keys *auth.KeySet, ttl time.Duration) (*Auth, error) {
	if !keys.CanSign() {
		return nil, fmt.Errorf("guest login: %w", auth.ErrCannotSign)
	}
	return &Auth{keys: keys, ttl: ttl, now: time.Now}, nil
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
	token, exp, err := a.keys.Sign(auth.Identity{Subject: playerID, Role: auth.RolePlayer, DisplayName: name}, a.now(), a.ttl)
	if err != nil {
		return nil, rpcerr.Auth.Error(codes.Internal, redisconn.ReasonInternal, "internal error: cannot sign tokens", nil)
	}
	return &authv1.GuestLoginResponse{
		PlayerId:    playerID,
		DisplayName: name,
		Token:       token,
		ExpiresAt:   timestamppb.New(exp),
	}, nil
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
