package transport_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// envHelper selects what the test binary does when it runs as the server
// process of the Command tests (see TestMain).
const envHelper = "KEEL_TRANSPORT_TEST_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHelper); mode != "" {
		os.Exit(serveHelper(mode))
	}
	os.Exit(m.Run())
}

// serveHelper is the fake server: it echoes each input line, then, at the
// end of its input, behaves as mode says:
//
//	echo      exits 0
//	fail      exits 3
//	lastword  after echoing the first line, writes one more and exits 0
//	linger    waits for SIGTERM, then exits 0
//	stubborn  ignores SIGTERM and waits to be killed
func serveHelper(mode string) int {
	if mode == "linger" || mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM) // overridden below for linger
	}
	term := make(chan os.Signal, 1)
	if mode == "linger" {
		signal.Notify(term, syscall.SIGTERM)
	}
	fmt.Println(`{"jsonrpc":"2.0","method":"ready"}`)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Println(sc.Text())
		if mode == "lastword" {
			fmt.Println(`{"jsonrpc":"2.0","method":"bye"}`)
			return 0
		}
	}
	switch mode {
	case "fail":
		return 3
	case "linger":
		<-term
	case "stubborn":
		select {}
	}
	return 0
}

func helperCommand(t *testing.T, mode string, opts *transport.CommandOptions) *transport.Command {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+mode)
	c, err := transport.NewCommand(cmd, opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := c.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, `{"jsonrpc":"2.0","method":"ready"}`, string(msg))
	return c
}

func TestCommandRoundTripAndClose(t *testing.T) {
	c := helperCommand(t, "echo", nil)
	assert.Equal(t, "stdio", c.Kind())
	ctx := context.Background()
	for i := range 3 {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
		require.NoError(t, c.Write(ctx, []byte(msg)))
		got, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, msg, string(got))
	}
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "idempotent")
	assert.ErrorIs(t, c.Write(ctx, []byte(`{}`)), transport.ErrClosed)
	_, err := c.Read(ctx)
	assert.ErrorIs(t, err, io.EOF)
}

// What the server writes just before it exits is still read, then EOF.
func TestCommandReadsTheLastWords(t *testing.T) {
	c := helperCommand(t, "lastword", nil)
	ctx := context.Background()
	require.NoError(t, c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	time.Sleep(100 * time.Millisecond) // the server exits (and is waited for) before we read
	for _, want := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","method":"bye"}`} {
		got, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	_, err := c.Read(ctx)
	assert.ErrorIs(t, err, io.EOF)
	assert.NoError(t, c.Close())
}

func TestCommandShutdownSteps(t *testing.T) {
	const step = 200 * time.Millisecond
	cases := []struct {
		mode    string
		min     time.Duration // Close takes at least this long
		wantErr string
	}{
		{"echo", 0, ""},
		{"fail", 0, "exit status 3"},
		{"linger", step, ""},       // stdin closed, then SIGTERM
		{"stubborn", 2 * step, ""}, // then SIGKILL
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			c := helperCommand(t, tc.mode, &transport.CommandOptions{TerminateTimeout: step})
			start := time.Now()
			err := c.Close()
			took := time.Since(start)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
			assert.GreaterOrEqual(t, took, tc.min)
			assert.Less(t, took, tc.min+10*step, "Close waited too long")
			assert.Error(t, c.Process().Signal(syscall.Signal(0)), "the process is gone")
		})
	}
}

func TestNewCommandErrors(t *testing.T) {
	_, err := transport.NewCommand(nil, nil)
	assert.ErrorContains(t, err, "nil *exec.Cmd")
	cmd := exec.Command(os.Args[0])
	cmd.Stdout = io.Discard
	_, err = transport.NewCommand(cmd, nil)
	assert.ErrorContains(t, err, "must be nil")
	_, err = transport.NewCommand(exec.Command("/nonexistent/keel-server"), nil)
	assert.ErrorContains(t, err, "starting the server")
}
