package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Root(deep); err == nil {
		t.Fatal("found a workspace where there is none")
	}
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, deep} {
		got, err := Root(dir)
		if err != nil || got != root {
			t.Errorf("Root(%s) = %q, %v; want %q", dir, got, err, root)
		}
	}
}
