// Package authtest gives tests the signing keys a service needs.
package authtest

import (
	"path/filepath"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// KeyFile generates a key set, writes it to a file in a temporary
// directory of tb (the file AUTH_KEYS_FILE names) and returns both: the
// keys sign the test's tokens, the service reads the file.
func KeyFile(tb testing.TB) (*auth.KeySet, string) {
	tb.Helper()
	keys, err := auth.GenerateKeySet("test")
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "keys.json")
	if err := keys.WriteFile(file); err != nil {
		tb.Fatal(err)
	}
	return keys, file
}
