// Package authtest gives tests the token keys a service needs.
package authtest

import (
	"path/filepath"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// KeyFile generates a key set, writes it with its private key to a file in
// a temporary directory of tb (the file AUTH_KEYS_FILE names for the
// service that mints tokens) and returns both: the keys sign the test's
// tokens, the service reads the file.
func KeyFile(tb testing.TB) (*auth.KeySet, string) {
	tb.Helper()
	keys := generate(tb)
	return keys, write(tb, keys, "keys.json")
}

// PublicKeyFile is [KeyFile] for a service that only verifies tokens: the
// file holds the public key only, the returned set signs the test's tokens.
func PublicKeyFile(tb testing.TB) (*auth.KeySet, string) {
	tb.Helper()
	keys := generate(tb)
	return keys, write(tb, keys.PublicOnly(), "public-keys.json")
}

// Files writes keys twice, as a deployment holds them: with the private
// key for the service that mints tokens, and public only for the others.
func Files(tb testing.TB, keys *auth.KeySet) (signing, public string) {
	tb.Helper()
	return write(tb, keys, "keys.json"), write(tb, keys.PublicOnly(), "public-keys.json")
}

func generate(tb testing.TB) *auth.KeySet {
	tb.Helper()
	keys, err := auth.GenerateKeySet("test")
	if err != nil {
		tb.Fatal(err)
	}
	return keys
}

func write(tb testing.TB, keys *auth.KeySet, name string) string {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), name)
	if err := keys.WriteFile(file); err != nil {
		tb.Fatal(err)
	}
	return file
}
