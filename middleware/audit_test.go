package middleware

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
)

func TestAuditEnterExitPair(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{}
	clock := newFakeClock(time.Millisecond)
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink, Now: clock.Now})
	res, err := ch.CallTool(context.Background(), call("echo", `{"message":"hi"}`, nil))
	require.NoError(t, err)

	enters, exits := sink.events()
	require.Len(t, enters, 1)
	require.Len(t, exits, 1)
	en, ex := enters[0], exits[0]
	assert.Equal(t, "echo", en.Tool)
	assert.JSONEq(t, `{"message":"hi"}`, string(en.Args))
	assert.Equal(t, "corr-1", en.CorrelationID)
	assert.Equal(t, "run-1", en.RunID)
	assert.Equal(t, "echo", ex.Tool)
	assert.Equal(t, en.CorrelationID, ex.CorrelationID)
	assert.Equal(t, en.RunID, ex.RunID)
	assert.Equal(t, en.Timestamp, ex.Start, "the exit event starts at the enter timestamp")
	assert.Equal(t, ex.End.Sub(ex.Start), ex.Duration)
	assert.Positive(t, ex.Duration)
	assert.Same(t, res, ex.Result)
	assert.NoError(t, ex.Err)
	assert.Equal(t, OutcomeSuccess, ex.Outcome)
}

func TestAuditSerialToolPairsDoNotInterleave(t *testing.T) {
	tt := newTestTools(t)
	sink := &orderSink{}
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink, LockAll: true})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ch.CallTool(context.Background(), call("echo", `{"message":"x"}`, nil))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, "enter exit enter exit enter exit enter exit enter exit", sink.String())
}

type orderSink struct{ recorder }

func (s *orderSink) Enter(context.Context, ToolEnterEvent) error { s.add("enter"); return nil }
func (s *orderSink) Exit(context.Context, ToolExitEvent) error   { s.add("exit"); return nil }

func TestAuditStandardSkipsCallsThatNeverValidated(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{}
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink})
	_, err := ch.CallTool(context.Background(), call("echo", `{"message":1}`, nil))
	require.Error(t, err)
	_, err = ch.CallTool(context.Background(), call("nope", `{}`, nil))
	require.Error(t, err)
	enters, exits := sink.events()
	assert.Empty(t, enters)
	assert.Empty(t, exits)
}

func TestAuditExitOutsideValidateRecordsValidationFailure(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{}
	ch := New(tt.reg, AuditExit(sink), Validate(), AuditEnter(sink))
	_, err := ch.CallTool(context.Background(), call("echo", `{"message":1}`, nil))
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	enters, exits := sink.events()
	assert.Empty(t, enters, "a call that never validated never enters")
	require.Len(t, exits, 1)
	assert.Same(t, se, structuredErr(t, exits[0].Err))
	assert.Equal(t, OutcomeToolError, exits[0].Outcome)
	assert.Nil(t, exits[0].Result)
}

func TestAuditEnterFailureStopsTheCall(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{enterErr: errors.New("db down: secret dsn")}
	var logs exampletest.SafeBuffer
	ran := false
	probe := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) { ran = true; return next(ctx, c) }
	}
	ch := New(tt.reg, AuditExit(sink), AuditEnter(sink), probe)
	_, err := ch.CallTool(context.Background(), call("echo", `{"message":"x"}`, &logs))
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Equal(t, "audit enter failed", se.Message)
	assert.NotContains(t, se.Error(), "secret")
	assert.False(t, ran, "the handler does not run")
	assert.Contains(t, logs.String(), "db down")
	enters, exits := sink.events()
	assert.Len(t, enters, 1)
	require.Len(t, exits, 1, "AuditExit outside AuditEnter still runs")
	assert.Same(t, se, structuredErr(t, exits[0].Err))
	assert.Equal(t, OutcomeToolError, exits[0].Outcome)
}

func TestAuditExitFailureNeverHidesTheResult(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{exitErr: errors.New("disk full")}
	var logs exampletest.SafeBuffer
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink})
	res, err := ch.CallTool(context.Background(), call("echo", `{"message":"kept"}`, &logs))
	require.NoError(t, err)
	assert.Equal(t, "kept", res.Content[0].Text)
	assert.Contains(t, logs.String(), "audit exit failed")
	assert.Contains(t, logs.String(), "disk full")

	_, err = ch.CallTool(context.Background(), call("panic", `{}`, nil))
	assert.Equal(t, mcp.ErrInternal, structuredErr(t, err).Code, "the original error survives a failing exit sink")
}

func TestAuditExitRecordsPanicAndRecoverAnswers(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{}
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink})
	_, err := ch.CallTool(context.Background(), call("panic", `{}`, nil))
	assert.Equal(t, mcp.ErrInternal, structuredErr(t, err).Code)
	_, exits := sink.events()
	require.Len(t, exits, 1)
	assert.Equal(t, OutcomeToolError, exits[0].Outcome)
	assert.Equal(t, "panic", structuredErr(t, exits[0].Err).Details["reason"])
}

func TestAuditTimeoutOutcomes(t *testing.T) {
	tt := newTestTools(t)
	sink := &memSink{}
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink, DefaultTimeout: 5 * time.Millisecond})

	// The handler gives up when its context ends: timeout.
	_, err := ch.CallTool(context.Background(), call("cooperate", `{}`, nil))
	<-tt.started
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)

	// The handler finishes its work after the deadline: late_completed, and
	// the audit sees the late result.
	go func() { <-tt.started; time.Sleep(10 * time.Millisecond); close(tt.release) }()
	_, err = ch.CallTool(context.Background(), call("block", `{}`, nil))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)

	// Audit-exit records a call when its handler has really returned.
	require.Eventually(t, func() bool { _, exits := sink.events(); return len(exits) == 2 }, waitLimit, time.Millisecond)
	_, exits := sink.events()
	assert.Equal(t, OutcomeTimeout, exits[0].Outcome)
	assert.Equal(t, OutcomeLateCompleted, exits[1].Outcome)
	require.NotNil(t, exits[1].Result)
	assert.Equal(t, "done", exits[1].Result.Content[0].Text)
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, exits[1].Err).Code)
}

func TestOutcomeClassification(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ok := mcp.TextResult("ok")
	isErr := &mcp.CallToolResult{IsError: true}
	toolErr := mcp.NewToolError(mcp.ErrInvalidArgument, "bad", nil)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		c    *Call
		res  *mcp.CallToolResult
		err  error
		want Outcome
	}{
		{"success", live, &Call{}, ok, nil, OutcomeSuccess},
		{"isError result", live, &Call{}, isErr, nil, OutcomeToolError},
		{"tool error", live, &Call{}, nil, toolErr, OutcomeToolError},
		{"plain error", live, &Call{}, nil, errors.New("x"), OutcomeToolError},
		{"protocol error", live, &Call{}, nil, &mcp.Error{Code: mcp.CodeInvalidParams}, OutcomeProtocolError},
		{"caller gone, handler failed", gone, &Call{}, nil, context.Canceled, OutcomeAborted},
		{"caller gone, handler completed", gone, &Call{}, ok, nil, OutcomeDisconnectedCompleted},
		{"timed out, handler gave up", live, timedOut(nil, context.DeadlineExceeded), nil, toolErr, OutcomeTimeout},
		{"timed out, handler completed", live, timedOut(ok, nil), nil, toolErr, OutcomeLateCompleted},
		{"timed out after disconnect", gone, timedOut(ok, nil), nil, toolErr, OutcomeLateCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, outcome(tc.ctx, tc.c, tc.res, tc.err))
		})
	}
}

func TestNopAuditSinkAddsNoStage(t *testing.T) {
	var h Handler = func(context.Context, *Call) (*mcp.CallToolResult, error) { return nil, nil }
	for _, mw := range []Middleware{AuditEnter(nil), AuditExit(nil), AuditEnter(NopAuditSink()), (&Audit{}).Exit()} {
		got := mw(h)
		assert.Equal(t, funcPC(h), funcPC(got), "the nop sink returns next unchanged")
	}
	assert.NoError(t, NopAuditSink().Enter(context.Background(), ToolEnterEvent{}))
	assert.NoError(t, NopAuditSink().Exit(context.Background(), ToolExitEvent{}))
}

// timedOut returns a Call whose deadline passed, with the handler's late
// outcome.
func timedOut(res *mcp.CallToolResult, err error) *Call {
	c := &Call{lateRes: res, lateErr: err}
	c.timedOut.Store(true)
	return c
}
