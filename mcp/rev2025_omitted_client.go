//go:build keel_omit2025

package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// Built with the tag keel_omit2025, the Client has no 2025 code (the
// rev2025_client_* files are left out): it speaks revision 2026-07-28
// only, and this file holds what the shared code needs in their place.
//
//   - ClientOptions.ProtocolVersion defaults to Version20260728, and
//     Connect refuses any other revision before sending anything, with an
//     error matching ErrNeedsVersion20260728.
//   - The Client methods of the 2025 methods (Ping, SetLoggingLevel,
//     Subscribe, Unsubscribe, and the 2025-11-25 tasks: CallToolAsTask,
//     TaskResult, ListTasks, ListAllTasks) send nothing and return an
//     error wrapping ErrMethodRemoved that says what to use instead;
//     GetTask points to PollTask.
//   - There is no session to renew or ping (ClientOptions.KeepAlive,
//     DisableReinitialize and OnReinitialized are not used), no ping of the
//     server is answered, SetRoots notifies nothing, and OnTaskStatus is
//     never called.

// clientDefaultVersion is the revision a Client asks for when
// ClientOptions.ProtocolVersion is empty: the only one this build has.
const clientDefaultVersion = Version20260728

// clientVersionRefused returns the error of Connect for a ProtocolVersion
// this build's Client does not speak (every revision but 2026-07-28).
func clientVersionRefused(v string) error {
	if v == Version20260728 {
		return nil
	}
	return fmt.Errorf("mcp: ClientOptions.ProtocolVersion %q: built with the tag keel_omit2025, the Client speaks %s only (leave ProtocolVersion empty or set Version20260728): %w",
		v, Version20260728, ErrNeedsVersion20260728)
}

// clientSession: there is no 2025 session. Connect refuses a client that
// would need one, so its calls are never made.
type clientSession struct{}

func (*clientSession) setup(*ClientOptions, *slog.Logger, *atomic.Pointer[InitializeResult]) {}
func (*clientSession) connect(*conn)                                                         {}

func (*clientSession) handshake(context.Context) (*InitializeResult, error) {
	return nil, errNoSession
}

func (*clientSession) call(context.Context, string, any, any) error { return errNoSession }
func (*clientSession) notify(context.Context, string, any) error    { return errNoSession }

// errNoSession is the error of a 2025 session's call in this build.
var errNoSession = fmt.Errorf("mcp: built with the tag keel_omit2025, the Client has no 2025 session: %w", ErrNeedsVersion20260728)

// startKeepAlive: there is no ping (ClientOptions.KeepAlive is not used).
func startKeepAlive(*Client) {}

// answerPing: no 2025 server pings this client.
func (*clientReader) answerPing(*jsonrpc.Message) bool { return false }

// taskStatus: there are no 2025-11-25 tasks (OnTaskStatus is not used).
func (*clientReader) taskStatus(*jsonrpc.Message) {}

// rootsChangedMethod is what a server asks the roots with (a 2026-07-28
// client tells no change): the CapabilityError of SetRoots for a client
// that did not declare roots names it.
const rootsChangedMethod = methodRootsList

// notifyRootsChanged: a 2026-07-28 client tells the server nothing.
func notifyRootsChanged(context.Context, *Client) error { return nil }

// Ping sends nothing: revision 2026-07-28 has no ping. The error wraps
// ErrMethodRemoved.
func (*Client) Ping(context.Context) error { return methodRemoved(methodPing, "") }

// SetLoggingLevel sends nothing: a 2026-07-28 client sends its level with
// each request (ClientOptions.LogLevel). The error wraps ErrMethodRemoved.
func (*Client) SetLoggingLevel(context.Context, LoggingLevel) error {
	return methodRemoved(methodLoggingSetLevel, hintSetLevel)
}

// Subscribe sends nothing: a 2026-07-28 client subscribes with Listen.
// The error wraps ErrMethodRemoved.
func (*Client) Subscribe(context.Context, string) error {
	return methodRemoved(methodResourcesSubscribe, hintSubscribe)
}

// Unsubscribe sends nothing: a 2026-07-28 client ends its Subscription.
// The error wraps ErrMethodRemoved.
func (*Client) Unsubscribe(context.Context, string) error {
	return methodRemoved(methodResourcesUnsubscribe, hintUnsubscribe)
}

// ErrTasksNotOffered is returned by CallToolAsTask when the server did not
// declare task-augmented tools/call; this build's CallToolAsTask returns
// an error wrapping ErrMethodRemoved instead.
var ErrTasksNotOffered = errors.New("mcp: the server does not offer task-augmented tools/call")

// CallToolAsTask sends nothing: revision 2026-07-28 has no task-augmented
// tools/call (a client declares the tasks extension and calls CallTool,
// which returns a *TaskStartedError for a task). The error wraps
// ErrMethodRemoved.
func (*Client) CallToolAsTask(context.Context, string, any, time.Duration) (*CreateTaskResult, error) {
	return nil, methodRemoved(methodToolsCall+" with params.task", hintCallToolAsTask)
}

// GetTask sends nothing: a 2026-07-28 client polls with PollTask.
func (*Client) GetTask(context.Context, string) (*Task, error) { return nil, errGetTask2026 }

// TaskResult sends nothing: revision 2026-07-28 has no tasks/result (a
// client waits with WaitTask). The error wraps ErrMethodRemoved.
func (*Client) TaskResult(context.Context, string) (*CallToolResult, error) {
	return nil, methodRemoved(methodTasksResult, hintTaskResult)
}

// ListTasks sends nothing: revision 2026-07-28 has no tasks/list. The
// error wraps ErrMethodRemoved.
func (*Client) ListTasks(context.Context, string) (*ListTasksResult, error) {
	return nil, methodRemoved(methodTasksList, "")
}

// ListAllTasks sends nothing, as ListTasks.
func (c *Client) ListAllTasks(ctx context.Context) ([]*Task, error) {
	_, err := c.ListTasks(ctx, "")
	return nil, err
}

// cancelTask2025: every client of this build is of revision 2026-07-28
// (Connect refuses another), so CancelTask never calls it.
func cancelTask2025(context.Context, *Client, string) (*Task, error) { return nil, errNoSession }
