//go:build unix

package streamhttp

import "syscall"

// openFileLimit returns the process's soft limit on open files (0: none
// known).
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
