package sqlstore_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
)

// Child processes: the test binary runs itself again with -test.run
// TestHelperProcess and the environment below.
const (
	envHelper = "AACP_TEST_HELPER" // which helper to run
	envStore  = "AACP_TEST_STORE"  // "sqlite:<path>" or "postgres:<dsn>"
	envDir    = "AACP_TEST_DIR"    // directory for the helper's files
	envCount  = "AACP_TEST_COUNT"  // number of requests
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestHelperProcess is not a test: it is the body of the child processes
// of the crash and two-process tests.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		return
	}
	var err error
	switch mode {
	case "crash-run", "crash-restart":
		err = crashChild(mode == "crash-restart")
	case "peer":
		err = peerChild()
	case "lease-owner":
		err = leaseOwnerChild()
	case "chaos-owner":
		err = chaosOwnerChild()
	default:
		err = fmt.Errorf("unknown helper %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helper starts the test binary as a child process running mode.
func helper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{envHelper + "=" + mode}, env...)...)
	cmd.Stderr = &prefixWriter{t: t, prefix: mode + ": "}
	return cmd
}

type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "PASS") && !strings.HasPrefix(line, "ok") {
			w.t.Log(w.prefix + line)
		}
	}
	return len(p), nil
}

// openStore opens the store a helper's environment names.
func openStore(spec string) (aacp.Store, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "sqlite":
		return sqlstore.OpenSQLite(arg)
	case "postgres":
		return sqlstore.OpenPostgres(arg)
	}
	return nil, fmt.Errorf("unknown store %q", spec)
}

// readLines returns the lines of a file (none if it does not exist).
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

// appendLine appends one line with a single write (atomic for appends of
// this size), so a SIGKILL never leaves half a line.
func appendLine(f *os.File, format string, args ...any) error {
	_, err := f.WriteString(fmt.Sprintf(format, args...) + "\n")
	return err
}

func timeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
