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
// the token is a credential).
type session struct {
	PlayerID    string    `json:"player_id"`
	DisplayName string    `json:"display_name"`
	Token       string    `json:"token"`
	ExpiresAt   time.Time `json:"expires_at"`
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
	if !s.ExpiresAt.IsZero() && time.Now().After(s.ExpiresAt) {
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
