package redistest

import "syscall"

// procAttr puts redis-server in its own process group (so kill reaches any
// child) and has the kernel kill it if the test binary dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
