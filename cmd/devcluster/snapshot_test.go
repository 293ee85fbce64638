package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/devredis"
)

// The launcher loads the last snapshot, starts empty without one or with
// -fresh (which deletes it), and refuses to start over a snapshot it cannot
// load, naming the way to start empty.
func TestLoadSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saved := func(t *testing.T, path string) {
		t.Helper()
		m, err := devredis.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := m.Set("rating:alice", "1500"); err != nil {
			t.Fatal(err)
		}
		if _, err := devredis.Save(ctx, m.Addr(), path); err != nil {
			t.Fatal(err)
		}
	}
	damaged := func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("not a snapshot"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		file     func(t *testing.T, path string)
		fresh    bool
		restored string // a prefix; "" for an empty start
		keys     int
		err      string
		kept     bool // the file is still there afterwards
	}{
		{name: "no snapshot"},
		{name: "snapshot", file: saved, restored: "1 keys saved ", keys: 1, kept: true},
		{name: "fresh", file: saved, fresh: true},
		{name: "damaged", file: damaged, err: "make run-fresh", kept: true},
		{name: "damaged, fresh", file: damaged, fresh: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), snapshotFile)
			if tc.file != nil {
				tc.file(t, path)
			}
			m, err := devredis.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			restored, err := loadSnapshot(ctx, m, path, tc.fresh, io.Discard)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, devredis.ErrBadSnapshot) {
					t.Errorf("loadSnapshot = %v, want ErrBadSnapshot naming %q", err, tc.err)
				}
			case err != nil:
				t.Fatalf("loadSnapshot: %v", err)
			case !strings.HasPrefix(restored, tc.restored) || (tc.restored == "") != (restored == ""):
				t.Errorf("restored %q, want %q...", restored, tc.restored)
			}
			if n := len(m.Keys()); n != tc.keys {
				t.Errorf("%d keys in the store, want %d", n, tc.keys)
			}
			if _, err := os.Stat(path); (err == nil) != tc.kept {
				t.Errorf("snapshot file after the start: %v, want kept %v", err, tc.kept)
			}
		})
	}
}

// The saver saves on stop even when it never saves periodically, and the
// file then loads.
func TestKeepSavingSavesOnStop(t *testing.T) {
	t.Parallel()
	m, err := devredis.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	path := filepath.Join(t.TempDir(), snapshotFile)
	stop := keepSaving(m.Addr(), path, 0, io.Discard)
	if err := m.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	stop()
	m2, err := devredis.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if n, _, err := devredis.Load(context.Background(), m2, path); err != nil || n != 1 {
		t.Fatalf("Load after stop = %d keys, %v; want 1", n, err)
	}
}
