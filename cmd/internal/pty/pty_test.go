package pty

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStart runs a shell on a terminal of 33 rows and 101 columns: its
// streams are a terminal of that size, what is typed is echoed and read
// as a line, its output's newlines reach the screen as CR LF, and ^C
// interrupts the foreground program.
func TestStart(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	script := `test -t 0 && test -t 1 && test -t 2 && echo streams are a terminal
stty size
read line; echo "read: $line"
trap 'echo interrupted; exit 0' INT
echo waiting; while :; do sleep 0.05; done`
	cmd := exec.Command("sh", "-c", script)
	term, err := Start(cmd, Size{Rows: 33, Cols: 101})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	var screen bytes.Buffer
	done := make(chan error, 1)
	chunks := make(chan []byte)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := term.Read(buf)
			if n > 0 {
				chunks <- bytes.Clone(buf[:n])
			}
			if err != nil {
				close(chunks)
				done <- err
				return
			}
		}
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !strings.Contains(screen.String(), what) {
			select {
			case c, ok := <-chunks:
				if !ok {
					t.Fatalf("the terminal closed before showing %q:\n%q", what, screen.String())
				}
				screen.Write(c)
			case <-deadline:
				t.Fatalf("the terminal never showed %q:\n%q", what, screen.String())
			}
		}
	}
	waitFor("33 101\r\n")
	if _, err := io.WriteString(term, "hello\r"); err != nil { // the Enter key sends CR
		t.Fatal(err)
	}
	waitFor("read: hello\r\n")
	waitFor("waiting\r\n")
	if _, err := io.WriteString(term, "\x03"); err != nil { // ^C
		t.Fatal(err)
	}
	waitFor("interrupted\r\n")
	for c := range chunks {
		screen.Write(c)
	}
	if err := <-done; err != io.EOF {
		t.Errorf("read after the shell ended: %v, want io.EOF", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("shell: %v", err)
	}
	for _, want := range []string{"streams are a terminal\r\n", "hello\r\n" /* the echo */} {
		if !strings.Contains(screen.String(), want) {
			t.Errorf("screen lacks %q:\n%q", want, screen.String())
		}
	}
}
