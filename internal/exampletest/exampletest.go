// Package exampletest runs an example server's main function as a real
// process, the way an MCP client launches it: the test binary re-executes
// itself with an environment variable that makes its TestMain call main
// instead of the tests. The child speaks MCP on its own standard input and
// output (transport kind "stdio"), reads its configuration from the flags
// and KEEL_* variables the test gives it, and nothing else: KEEL_*
// variables of the parent's environment are not inherited.
package exampletest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// EnvRunMain is the variable that makes Main run the example's main
// function instead of the tests.
const EnvRunMain = "KEEL_EXAMPLETEST_RUN_MAIN"

// Main is an example's TestMain: in a child started by Command it runs
// main and exits 0 when main returns; otherwise it runs the tests.
func Main(m *testing.M, main func()) {
	if os.Getenv(EnvRunMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Command returns the command that runs the example's main with args and
// with env ("KEY=value" entries) added to the parent's environment minus
// its KEEL_* variables. Its standard error is collected in the returned
// buffer.
func Command(t testing.TB, env []string, args ...string) (*exec.Cmd, *SafeBuffer) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, EnvRunMain+"=1")
	cmd.Env = append(cmd.Env, env...)
	stderr := &SafeBuffer{}
	cmd.Stderr = stderr
	return cmd, stderr
}

// Start runs the example's main with args and env (see Command) and
// returns a Client connected to it over the child's standard streams, and
// the child's standard error. When the test ends the client is closed,
// which closes the child's standard input: the child must then exit
// cleanly.
func Start(t testing.TB, env []string, args ...string) (*mcp.Client, *transport.Command, *SafeBuffer) {
	t.Helper()
	cmd, stderr := Command(t, env, args...)
	ct, err := transport.NewCommand(cmd, nil)
	require.NoError(t, err)
	c := mcp.NewClient(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx, ct); err != nil {
		ct.Close()
		require.NoError(t, err, "connecting to the example; its stderr:\n%s", stderr)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("the example did not exit cleanly: %v; its stderr:\n%s", err, stderr)
		}
	})
	return c, ct, stderr
}

// Fail runs the example's main with args and env (see Command), which must
// exit with a non-zero status without reading its input, and returns that
// status and what it wrote to standard error.
func Fail(t testing.TB, env []string, args ...string) (code int, stderr string) {
	t.Helper()
	cmd, buf := Command(t, env, args...)
	cmd.Stdin = strings.NewReader("") // EOF at once, in case the example serves after all
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the example must fail (got %v); its stderr:\n%s", err, buf)
	return ee.ExitCode(), buf.String()
}

// SafeBuffer is a bytes.Buffer safe for concurrent use: the child's
// standard error is copied into it while the test reads it.
type SafeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SafeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SafeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
