package rpcerr_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// statusCall is a gRPC status built by hand, bypassing this package.
var statusCall = regexp.MustCompile(`status\.(Error|Errorf|New)\(([\w.]*)`)

// TestEveryRefusalHasErrorInfo greps the production code of pkg/ and
// services/ for statuses built without this package: every refusal must
// carry an ErrorInfo. Only CANCELED and DEADLINE_EXCEEDED, the caller's own
// ending, are built bare (redisconn.Status). Test files and the clients in
// cmd/ are not refusals of a service.
func TestEveryRefusalHasErrorInfo(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	for _, dir := range []string{"pkg", "services"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				filepath.Base(filepath.Dir(path)) == "rpcerr" {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				for _, m := range statusCall.FindAllStringSubmatch(line, -1) {
					if m[2] == "codes.Canceled" || m[2] == "codes.DeadlineExceeded" {
						continue
					}
					t.Errorf("%s:%d: %s builds a status without an ErrorInfo: use rpcerr", path, i+1, m[0])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
