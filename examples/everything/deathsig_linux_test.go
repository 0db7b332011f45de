package main

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd when the test process dies, so that
// a replica or the balancer never outlives a test that was killed.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
