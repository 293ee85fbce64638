package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// proc is one service process.
//
// Shutdown guarantees: every child runs in its own process group (so a
// Ctrl-C at the terminal reaches only the launcher, which then stops the
// children in order), with Pdeathsig SIGKILL (so a launcher that dies
// without cleaning up still takes its children with it). stop sends SIGTERM
// to the group, waits for the graceful shutdown, then SIGKILLs the group.
type proc struct {
	name    string
	addr    string // gRPC address
	admin   string // admin HTTP address
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has been waited for
	err     error         // the wait result, set before exited closes
}

// start launches bin with env, its output appended to logPath.
func start(name, bin string, env []string, addr, admin, logPath string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, addr: addr, admin: admin, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls the gRPC health service until it answers SERVING, the
// process exits, or ctx ends.
func (p *proc) waitReady(ctx context.Context) error {
	cc, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (log: %s)", p.name, ctx.Err(), p.logPath)
		case <-p.exited:
			return fmt.Errorf("%s exited at start: %v\n%s", p.name, p.err, tail(p.logPath, 15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop terminates the process group gracefully, then forcibly after grace.
func (p *proc) stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("%s did not stop within %v: killed", p.name, grace)
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stopAll stops processes in reverse start order and reports every failure.
func stopAll(ps []*proc, grace time.Duration) error {
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		errs = append(errs, ps[i].stop(grace))
	}
	return errors.Join(errs...)
}
