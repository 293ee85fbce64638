package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// instance is one service process. It runs in its own process group with
// a parent-death signal, so it dies with the harness; in a network
// namespace when netns is set (through `ip netns exec`, which execs the
// binary: the pid is the service's).
type instance struct {
	name    string // "match-1"
	service string // "match"
	bin     string
	env     []string
	addr    string // gRPC host:port (as reached from the harness)
	netns   string
	logPath string

	cmd    *exec.Cmd
	exited chan struct{}
}

func (in *instance) start() error {
	logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", in.name, err)
	}
	cmd := exec.Command(in.bin)
	if in.netns != "" {
		cmd = exec.Command("ip", "netns", "exec", in.netns, in.bin)
	}
	cmd.Env = in.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", in.name, err)
	}
	in.cmd, in.exited = cmd, make(chan struct{})
	exited := in.exited
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	return nil
}

// waitReady polls the gRPC health service until it answers SERVING.
func (in *instance) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cc, err := grpc.NewClient(in.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		ccancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v (log %s):\n%s", in.name, limit, in.logPath, tail(in.logPath, 10))
		case <-in.exited:
			return fmt.Errorf("%s exited at start:\n%s", in.name, tail(in.logPath, 15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// signal sends sig to the instance's process group.
func (in *instance) signal(sig syscall.Signal) {
	if in.cmd != nil {
		_ = syscall.Kill(-in.cmd.Process.Pid, sig)
	}
}

// kill SIGKILLs the instance and waits until it is gone.
func (in *instance) kill() {
	if in.cmd == nil {
		return
	}
	in.signal(syscall.SIGKILL) // kills a stopped process as well
	<-in.exited
	in.cmd = nil
}

// stopGracefully sends SIGTERM and waits up to grace, then kills.
func (in *instance) stopGracefully(grace time.Duration) {
	if in.cmd == nil {
		return
	}
	in.signal(syscall.SIGCONT)
	in.signal(syscall.SIGTERM)
	select {
	case <-in.exited:
		in.cmd = nil
	case <-time.After(grace):
		in.kill()
	}
}

// alive reports whether the process still runs.
func (in *instance) alive() bool {
	if in.cmd == nil {
		return false
	}
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}
