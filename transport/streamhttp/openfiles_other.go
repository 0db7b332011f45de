//go:build !unix

package streamhttp

// openFileLimit returns 0: no open-file limit is known on this system.
func openFileLimit() int { return 0 }
