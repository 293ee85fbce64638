// Package pty runs a command on a pseudo-terminal, so that a test sees
// what a person at a terminal sees: the terminal's line discipline echoes
// what is typed, turns the Enter key's "\r" into "\n" for the program and
// its "\n" into "\r\n" on the screen, delivers Ctrl-C as SIGINT to the
// foreground process group, and the program finds a terminal (isatty) of
// a given size on its standard streams.
//
// Linux only (/dev/ptmx, through golang.org/x/sys/unix); it exists for the
// end-to-end tests of the terminal client, which capture its screens.
package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Size is a terminal's size in character cells.
type Size struct {
	Rows, Cols uint16
}

// Start starts cmd with a new pseudo-terminal of size as its standard
// input, output and error and as its controlling terminal (in a new
// session), and returns the terminal's other end: what is written to it
// is typed, what is read from it is the screen's byte stream. Reading
// ends with io.EOF once the command and every process it started have
// closed the terminal (see Terminal.Read). The caller waits for cmd
// (cmd.Wait) and closes the Terminal.
func Start(cmd *exec.Cmd, size Size) (*Terminal, error) {
	ptmx, tty, err := open()
	if err != nil {
		return nil, err
	}
	defer tty.Close() // the child has its own copies
	if err := control(tty, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	}); err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("pty: set window size: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A session of its own with the terminal as controlling terminal (fd
	// 0 of the child): the foreground process group gets SIGINT for ^C.
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	if err := cmd.Start(); err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("pty: start %s: %w", cmd.Path, err)
	}
	return &Terminal{f: ptmx}, nil
}

// Terminal is the controlling side of a pseudo-terminal.
type Terminal struct {
	f *os.File
}

// Write types p.
func (t *Terminal) Write(p []byte) (int, error) { return t.f.Write(p) }

// Read reads what the programs on the terminal wrote. Linux answers EIO
// once no process holds the terminal any more; Read reports that as
// io.EOF.
func (t *Terminal) Read(p []byte) (int, error) {
	n, err := t.f.Read(p)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

// Close closes the terminal; programs still on it get SIGHUP.
func (t *Terminal) Close() error { return t.f.Close() }

// open returns a new pseudo-terminal's two ends.
func open() (ptmx, tty *os.File, err error) {
	ptmx, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("pty: %w", err)
	}
	var n uint32
	err = control(ptmx, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
			return err
		}
		n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
		return err
	})
	if err != nil {
		ptmx.Close()
		return nil, nil, fmt.Errorf("pty: unlock and name the terminal: %w", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		return nil, nil, fmt.Errorf("pty: %w", err)
	}
	return ptmx, tty, nil
}

// control runs f on f's descriptor without switching it to blocking mode
// (as File.Fd would), so reads stay interruptible by Close.
func control(file *os.File, f func(fd int) error) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
