//go:build !linux

package redistest

import "syscall"

// procAttr puts redis-server in its own process group. Without Linux's
// parent-death signal, a crashed test binary may leave servers behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
