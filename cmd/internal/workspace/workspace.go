// Package workspace locates the repository's Go workspace, for the tools
// that build and start the services from source.
package workspace

import (
	"fmt"
	"os"
	"path/filepath"
)

// Root returns the directory holding go.work at or above dir.
func Root(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.work at or above %s: run from the repository", dir)
		}
		d = parent
	}
}
