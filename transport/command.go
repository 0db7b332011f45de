package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultTerminateTimeout is how long Command.Close waits for the server
// process at each step of its shutdown unless CommandOptions says otherwise.
const DefaultTerminateTimeout = 5 * time.Second

// CommandOptions configures NewCommand. The zero value (or a nil
// *CommandOptions) selects the defaults.
type CommandOptions struct {
	// MaxMessageBytes limits one incoming line (default
	// DefaultMaxMessageBytes), as StdioOptions does.
	MaxMessageBytes int
	// TerminateTimeout is how long Close waits for the server to exit after
	// closing its standard input, and then again after SIGTERM, before it
	// kills the process (default DefaultTerminateTimeout).
	TerminateTimeout time.Duration
}

// Command is the client side of the stdio transport: it runs an MCP
// server as a subprocess and exchanges newline-delimited messages with it
// over the subprocess's standard input and output (framing, limits and
// flushing as in Stdio; Kind "stdio"). The server's standard error is
// whatever the exec.Cmd says (nil: discarded); set cmd.Stderr to see its
// logs. Create it with NewCommand; Close stops the server.
type Command struct {
	io      *Stdio
	cmd     *exec.Cmd
	timeout time.Duration

	exited  chan struct{} // closed when the process has exited
	waitErr error         // cmd.Wait's result, set before exited closes

	closeOnce sync.Once
	closeErr  error
}

var _ Transport = (*Command)(nil)

// NewCommand starts cmd, which must not have its Stdin or Stdout set, and
// returns a transport to it. An error means the process did not start.
func NewCommand(cmd *exec.Cmd, opts *CommandOptions) (*Command, error) {
	if cmd == nil {
		return nil, errors.New("transport: NewCommand: nil *exec.Cmd")
	}
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("transport: NewCommand: cmd.Stdin and cmd.Stdout must be nil: the transport uses them")
	}
	var o CommandOptions
	if opts != nil {
		o = *opts
	}
	if o.TerminateTimeout <= 0 {
		o.TerminateTimeout = DefaultTerminateTimeout
	}
	// Pipes of our own (not StdoutPipe): Wait closes those, which would
	// lose what the server wrote just before it exited and we have not
	// read yet.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("transport: NewCommand: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("transport: NewCommand: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	// The child holds its ends now; ours would keep EOF from ever coming.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("transport: starting the server: %w", err)
	}
	c := &Command{
		io:      NewStdioStreams(outR, inW, &StdioOptions{MaxMessageBytes: o.MaxMessageBytes}),
		cmd:     cmd,
		timeout: o.TerminateTimeout,
		exited:  make(chan struct{}),
	}
	go func() { // ends when the process does
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Kind returns "stdio".
func (c *Command) Kind() string { return "stdio" }

// Read returns the next message from the server; io.EOF once the server
// has closed its standard output (or exited) and after Close.
func (c *Command) Read(ctx context.Context) ([]byte, error) { return c.io.Read(ctx) }

// Write sends one message to the server's standard input.
func (c *Command) Write(ctx context.Context, msg []byte) error { return c.io.Write(ctx, msg) }

// Process returns the server's process (for its Pid, say).
func (c *Command) Process() *os.Process { return c.cmd.Process }

// Close stops the server as the MCP stdio transport asks: it closes the
// server's standard input and waits up to TerminateTimeout for it to exit,
// then sends SIGTERM and waits as long again, then kills it. It returns
// the server's exit error if the server failed on its own (an exit status
// other than 0), nil if it exited cleanly or had to be stopped with a
// signal. Close is idempotent.
func (c *Command) Close() error {
	c.closeOnce.Do(func() {
		_ = c.io.Close() // EOF on the server's stdin; unblocks our reads
		if c.waitFor(c.timeout) {
			if c.waitErr != nil {
				c.closeErr = fmt.Errorf("transport: the server process: %w", c.waitErr)
			}
			return
		}
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err == nil && c.waitFor(c.timeout) {
			return
		}
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	return c.closeErr
}

// waitFor reports whether the process exits within d.
func (c *Command) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}
