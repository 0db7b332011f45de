package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Errors Progress.Report returns for progress it does not send.
var (
	// ErrRequestCompleted: the request was answered (or cancelled); the
	// protocol allows no progress notification after that.
	ErrRequestCompleted = errors.New("mcp: progress after the request completed")
	// ErrProgressNotIncreasing: progress must increase with every
	// notification.
	ErrProgressNotIncreasing = errors.New("mcp: progress does not increase")
)

// Progress reports the progress of one request to the client, as
// notifications/progress for the progressToken the client put in the
// request's _meta. Get it with ProgressFromContext; all its methods are
// safe for concurrent use, and do nothing on a nil Progress.
type Progress struct {
	mu      sync.Mutex
	init    bool
	ss      *Session
	version string         // the revision of the request (progress messages arrived in 2025-03-26)
	token   jsontext.Value // nil: the client asked for no progress
	stopped *atomic.Bool   // set when the response was sent or suppressed
	task    *taskEntry     // the task the request runs as: notifications carry its related-task _meta
	last    float64
	sent    bool
	done    bool
}

type progressKey struct{}

// withProgress returns ctx carrying the Progress of a request whose raw
// params are params (its progress token is read from params._meta, exactly
// as sent). Requests other than tools/call (whose ToolCall holds its
// Progress) use it; the request's job must call finish before answering.
func (ss *Session) withProgress(ctx context.Context, params jsontext.Value, version string) (context.Context, *Progress) {
	p := &Progress{init: true, ss: ss, version: version, token: rawProgressToken(params)}
	return context.WithValue(ctx, progressKey{}, p), p
}

// rawProgressToken returns params._meta.progressToken if it is a string or
// an integer.
func rawProgressToken(params jsontext.Value) jsontext.Value {
	if params.Kind() != '{' {
		return nil
	}
	var p struct {
		Meta struct {
			Token jsontext.Value `json:"progressToken"`
		} `json:"_meta"`
	}
	if jsonv2.Unmarshal(params, &p) != nil {
		return nil
	}
	switch t := p.Meta.Token; t.Kind() {
	case '"':
		return t
	case '0':
		if f, err := strconv.ParseFloat(string(t), 64); err == nil && f == math.Trunc(f) {
			return t
		}
	}
	return nil
}

// ProgressFromContext returns the Progress of the request ctx belongs to
// (a tools/call, or another request a Server serves), or nil outside one.
func ProgressFromContext(ctx context.Context) *Progress {
	if p, ok := ctx.Value(progressKey{}).(*Progress); ok {
		return p
	}
	call := ToolCallFromContext(ctx)
	if call == nil || call.Session == nil {
		return nil
	}
	p := &call.progress
	p.mu.Lock()
	if !p.init {
		p.init, p.ss, p.token, p.task = true, call.Session, progressToken(call.Meta), call.task
		if req := RequestFromContext(ctx); req != nil && call.task == nil && call.run == nil {
			p.stopped = &req.f.done.closed // the request the call answers
		}
		p.version = protocolVersionFromContext(ctx)
	}
	p.mu.Unlock()
	return p
}

// ReportProgress reports progress on the request ctx belongs to; it is
// ProgressFromContext(ctx).Report(ctx, progress, total, message).
func ReportProgress(ctx context.Context, progress, total float64, message string) error {
	return ProgressFromContext(ctx).Report(ctx, progress, total, message)
}

// progressToken returns _meta.progressToken as JSON: a string or an
// integer; nil when absent or of another type.
func progressToken(meta Meta) jsontext.Value {
	switch t := meta[MetaProgressToken].(type) {
	case string:
		b, err := jsontext.AppendQuote(nil, t)
		if err != nil {
			return nil
		}
		return b
	case float64: // how JSON numbers decode into Meta
		if t != math.Trunc(t) || math.IsInf(t, 0) {
			return nil
		}
		return strconv.AppendFloat(nil, t, 'f', -1, 64)
	case int:
		return strconv.AppendInt(nil, int64(t), 10)
	case int64:
		return strconv.AppendInt(nil, t, 10)
	}
	return nil
}

// Enabled reports whether the client asked for progress on this request
// (it sent a progressToken). Without one, Report sends nothing.
func (p *Progress) Enabled() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.token != nil
}

// Token returns the request's progress token as JSON (nil when none).
func (p *Progress) Token() json.RawMessage {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return json.RawMessage(p.token)
}

// Report sends notifications/progress: progress so far, total (0 when
// unknown) and a message (sent only to clients of 2025-03-26 or later).
// Without a progress token (see Enabled) it does nothing and returns nil.
// It sends nothing and returns an error when progress is not greater than
// the last value reported (ErrProgressNotIncreasing), when the values are
// not finite or total is negative, and once the request has been answered
// or cancelled (ErrRequestCompleted): no notification ever follows the
// response. It blocks while the client reads slowly, at most until ctx ends.
func (p *Progress) Report(ctx context.Context, progress, total float64, message string) error {
	if p == nil {
		return nil
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) || math.IsNaN(total) || math.IsInf(total, 0) || total < 0 {
		return fmt.Errorf("mcp: invalid progress %v of total %v", progress, total)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token == nil {
		return nil
	}
	if p.done || (p.stopped != nil && p.stopped.Load()) {
		return ErrRequestCompleted
	}
	if p.sent && progress <= p.last {
		return fmt.Errorf("%w: %v after %v", ErrProgressNotIncreasing, progress, p.last)
	}
	n := ProgressParams{ProgressToken: json.RawMessage(p.token), Progress: progress}
	if total > 0 {
		n.Total = &total
	}
	n.Message = progressMessage(message, p.version)
	if p.task != nil {
		n.Meta = relatedTaskMeta(p.task.id)
	}
	if err := p.ss.conn.notify(ctx, notificationProgress, &n); err != nil {
		return err
	}
	p.last, p.sent = progress, true
	return nil
}

// finish marks the request completed: Report sends nothing from now on.
// Once it returns, no notification is being written either, so the
// response that follows is the last message about the request.
func (p *Progress) finish() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}
