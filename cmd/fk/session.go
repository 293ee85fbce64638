package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// session is the signed-in guest, kept in <home>/session.json (mode 0600:
// the tokens are credentials). The refresh token brings the same player
// back once the player token has expired (AuthService.RefreshSession);
// each use replaces it, and the file with it.
type session struct {
	PlayerID         string    `json:"player_id"`
	DisplayName      string    `json:"display_name"`
	Token            string    `json:"token"`
	ExpiresAt        time.Time `json:"expires_at"`
	RefreshToken     string    `json:"refresh_token,omitempty"`
	RefreshExpiresAt time.Time `json:"refresh_expires_at,omitzero"`
}

// refreshMargin is how long before its expiry a player token is renewed,
// so that a command does not start with a token about to die.
const refreshMargin = time.Minute

// stale reports whether the player token is expired, or about to be, at now.
func (s session) stale(now time.Time) bool {
	return !s.ExpiresAt.IsZero() && !now.Add(refreshMargin).Before(s.ExpiresAt)
}

// refreshable reports whether the refresh token may still work at now.
func (s session) refreshable(now time.Time) bool {
	return s.RefreshToken != "" && (s.RefreshExpiresAt.IsZero() || now.Before(s.RefreshExpiresAt))
}

func sessionPath(home string) string { return filepath.Join(home, "session.json") }

func loadSession(home string) (session, error) {
	data, err := os.ReadFile(sessionPath(home))
	if errors.Is(err, os.ErrNotExist) {
		return session{}, errors.New("not signed in: run `fk login` first")
	}
	if err != nil {
		return session{}, err
	}
	var s session
	if err := json.Unmarshal(data, &s); err != nil {
		return session{}, fmt.Errorf("%s: %w", sessionPath(home), err)
	}
	if now := time.Now(); now.After(s.ExpiresAt) && !s.ExpiresAt.IsZero() && !s.refreshable(now) {
		return session{}, errors.New("the session expired: run `fk login` again")
	}
	return s, nil
}

func saveSession(home string, s session) error {
	if home == "" {
		return errors.New("no home directory for the session: set --home or FK_HOME")
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := sessionPath(home) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, sessionPath(home))
}
