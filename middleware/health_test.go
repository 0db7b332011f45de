package middleware

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

func TestHealthThresholds(t *testing.T) {
	ms := func(f float64) float64 { return f }
	for _, tc := range []struct {
		name      string
		conc, max int
		delayMs   float64
		exhausted int64
		want      HealthStatus
	}{
		{"idle", 0, 10, 0, 0, StatusHealthy},
		{"80% is still healthy", 8, 10, 0, 0, StatusHealthy},
		{"over 80% degrades", 9, 10, 0, 0, StatusDegraded},
		{"full is unhealthy", 10, 10, 0, 0, StatusUnhealthy},
		{"delay 100ms is healthy", 0, 10, ms(100), 0, StatusHealthy},
		{"delay over 100ms degrades", 0, 10, ms(100.5), 0, StatusDegraded},
		{"delay 500ms is degraded", 0, 10, ms(500), 0, StatusDegraded},
		{"delay over 500ms is unhealthy", 0, 10, ms(501), 0, StatusUnhealthy},
		{"2 exhausted is healthy", 0, 10, 0, 2, StatusHealthy},
		{"3 exhausted is unhealthy", 0, 10, 0, 3, StatusUnhealthy},
		{"unlimited never full", 1000, 0, 0, 0, StatusHealthy},
		{"max 1 in use", 1, 1, 0, 0, StatusUnhealthy},
		{"4 of 5 is healthy", 4, 5, 0, 0, StatusHealthy},
		{"worst wins", 9, 10, 600, 0, StatusUnhealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := ResourceTelemetry{ConcurrentExecutions: tc.conc, MaxConcurrentExecutions: tc.max, EventLoopDelayMs: tc.delayMs}
			assert.Equal(t, tc.want, tel.Status(tc.exhausted))
		})
	}
}

type fixedDelay time.Duration

func (d fixedDelay) Delay() time.Duration { return time.Duration(d) }

func TestHealthTool(t *testing.T) {
	resetExhausted()
	tt := newTestTools(t)
	lim := NewLimiter(4)
	require.NoError(t, RegisterHealthTool(tt.reg, &HealthOptions{
		Name: "srv", Version: "1.2.3", Limiter: lim, ToolTimeout: 5 * time.Second, MaxPayloadBytes: 2048,
		Delay: fixedDelay(150 * time.Millisecond), MemoryUsage: func() uint64 { return 42 },
	}))
	tool, ok := tt.reg.Lookup("health")
	require.True(t, ok)
	assert.NotEmpty(t, tool.Definition().OutputSchema)

	ch := Standard(tt.reg, &StandardOptions{Limiter: lim})
	res, err := ch.CallTool(context.Background(), call("health", `{}`, nil))
	require.NoError(t, err)
	var rep HealthReport
	require.NoError(t, json.Unmarshal(res.StructuredContent, &rep))
	assert.Equal(t, HealthReport{
		Server: HealthServer{Name: "srv", Version: "1.2.3"},
		Config: HealthConfig{ToolTimeoutMs: 5000, MaxConcurrentExecutions: 4, MaxPayloadBytes: 2048, MaxStateBytes: DefaultMaxStateBytes},
		Resources: ResourceTelemetry{MemoryUsageBytes: 42, EventLoopDelayMs: 150,
			ConcurrentExecutions: 1, MaxConcurrentExecutions: 4}, // the health call itself holds a slot
		Status: StatusDegraded, // delay > 100ms
	}, rep)

	_, err = ch.CallTool(context.Background(), call("health", `{"extra":1}`, nil))
	assert.Equal(t, mcp.ErrInvalidArgument, structuredErr(t, err).Code)
}

func TestHealthDefaultsMeasureRealValues(t *testing.T) {
	resetExhausted()
	rep := Health(nil)
	assert.Equal(t, "keel", rep.Server.Name)
	assert.Equal(t, HealthConfig{ToolTimeoutMs: 30000, MaxConcurrentExecutions: 10, MaxPayloadBytes: 1 << 20, MaxStateBytes: 256 << 10}, rep.Config)
	assert.Positive(t, rep.Resources.MemoryUsageBytes)
	assert.GreaterOrEqual(t, rep.Resources.EventLoopDelayMs, 0.0)
	assert.Equal(t, 10, rep.Resources.MaxConcurrentExecutions)
	assert.Contains(t, []HealthStatus{StatusHealthy, StatusDegraded}, rep.Status)
}

func TestHealthUnhealthyAfterThreeExhaustedThenReset(t *testing.T) {
	resetExhausted()
	tt := newTestTools(t)
	require.NoError(t, RegisterHealthTool(tt.reg, &HealthOptions{Delay: fixedDelay(0)}))
	ch := New(tt.reg, PayloadLimit(10))
	for i := 1; i <= 3; i++ {
		_, err := ch.CallTool(context.Background(), call("echo", `{"message":"too long for ten bytes"}`, nil))
		assert.Equal(t, mcp.ErrResourceExhausted, structuredErr(t, err).Code)
		assert.EqualValues(t, i, ResourceExhaustedCount())
	}
	rep := Health(&HealthOptions{Delay: fixedDelay(0)})
	assert.Equal(t, StatusUnhealthy, rep.Status)
	assert.EqualValues(t, 3, rep.ResourceExhaustedCount)

	// A protocol error (unknown tool) neither counts nor resets.
	_, err := ch.CallTool(context.Background(), call("nope", `{}`, nil))
	require.Error(t, err)
	assert.EqualValues(t, 3, ResourceExhaustedCount())

	// The health call itself completes normally and so resets the counter;
	// it reports the count it saw.
	res, err := ch.CallTool(context.Background(), call("health", `{}`, nil))
	require.NoError(t, err)
	var rep2 HealthReport
	require.NoError(t, json.Unmarshal(res.StructuredContent, &rep2))
	assert.Equal(t, StatusUnhealthy, rep2.Status)
	assert.EqualValues(t, 0, ResourceExhaustedCount())

	// Any other tool error resets too.
	exhausted.Store(2)
	_, err = ch.CallTool(context.Background(), call("nilres", `{}`, nil))
	assert.Equal(t, mcp.ErrInternal, structuredErr(t, err).Code)
	assert.EqualValues(t, 0, ResourceExhaustedCount())
	RecordToolCallCompletion(mcp.NewToolError(mcp.ErrResourceExhausted, "x", nil))
	assert.EqualValues(t, 1, ResourceExhaustedCount())
	RecordToolCallCompletion(nil)
	assert.EqualValues(t, 0, ResourceExhaustedCount())
}

func TestPingTool(t *testing.T) {
	reg := registry.New(nil)
	clock := newFakeClock(1500 * time.Microsecond)
	boot := clock.Now()
	require.NoError(t, RegisterPingTool(reg, &PingOptions{Version: "9.9.9-test", Mode: ModeReadOnly, Now: clock.Now, Start: boot}))
	tool, ok := reg.Lookup("server_ping")
	require.True(t, ok)
	assert.NotEmpty(t, tool.Definition().OutputSchema)
	ch := Standard(reg, nil)
	for _, want := range []int64{1, 3} { // 1.5ms, then 3ms after boot: floor in ms
		res, err := ch.CallTool(context.Background(), call("server_ping", `{}`, nil))
		require.NoError(t, err)
		var got PingResult
		require.NoError(t, json.Unmarshal(res.StructuredContent, &got))
		assert.Equal(t, PingResult{Version: "9.9.9-test", Mode: ModeReadOnly, UptimeMs: want}, got)
	}
}

func TestPingToolDefaultsAndInvalidMode(t *testing.T) {
	reg := registry.New(nil)
	require.NoError(t, RegisterPingTool(reg, nil))
	res, err := New(reg).CallTool(context.Background(), call("server_ping", `{}`, nil))
	require.NoError(t, err)
	var got PingResult
	require.NoError(t, json.Unmarshal(res.StructuredContent, &got))
	assert.Equal(t, ModeFull, got.Mode)
	assert.Equal(t, "0.0.0", got.Version)
	assert.GreaterOrEqual(t, got.UptimeMs, int64(0))

	err = RegisterPingTool(registry.New(nil), &PingOptions{Mode: "DEBUG"})
	assert.ErrorContains(t, err, `invalid mode "DEBUG"`)
	for _, m := range []Mode{ModeFull, ModeReadOnly, ModeTest, ModeMinimal} {
		assert.True(t, m.Valid())
	}
	// A clock behind the boot time never gives a negative uptime.
	reg = registry.New(nil)
	now := time.Now()
	require.NoError(t, RegisterPingTool(reg, &PingOptions{Now: func() time.Time { return now }, Start: now.Add(time.Second)}))
	res, err = New(reg).CallTool(context.Background(), call("server_ping", `{}`, nil))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(res.StructuredContent, &got))
	assert.Zero(t, got.UptimeMs)
}

func TestDelayMonitorLifecycle(t *testing.T) {
	m := NewDelayMonitor(time.Millisecond, 3)
	require.NoError(t, m.Start(context.Background()))
	assert.ErrorIs(t, m.Start(context.Background()), ErrMonitorRunning)
	require.Eventually(t, func() bool { return m.Delay() > 0 }, time.Second, time.Millisecond)
	m.Stop() // returns only after the goroutine ended
	m.Stop() // idempotent

	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Start(ctx))
	cancel()
	require.Eventually(t, func() bool { return m.Start(context.Background()) == nil }, time.Second, time.Millisecond,
		"a monitor ended by its context can start again")
	m.Stop()

	d := NewDelayMonitor(0, 0)
	assert.Equal(t, 100*time.Millisecond, d.interval)
	assert.Equal(t, 10, d.window)
	assert.GreaterOrEqual(t, MeasureSchedulingDelay(), time.Duration(0))
}

func TestDelayMonitorSeesStall(t *testing.T) {
	// Not a timing assertion on the scheduler: a sample is lateness >= 0,
	// and the probe interface plugs into health.
	m := NewDelayMonitor(time.Millisecond, 5)
	require.NoError(t, m.Start(context.Background()))
	defer m.Stop()
	require.Eventually(t, func() bool { return m.Delay() > 0 }, time.Second, time.Millisecond)
	rep := Health(&HealthOptions{Delay: m})
	assert.Greater(t, rep.Resources.EventLoopDelayMs, 0.0)
}

// Many concurrent calls through the whole standard chain: every call ends in
// a result or RESOURCE_EXHAUSTED, and every slot is given back.
func TestStandardChainUnderRace(t *testing.T) {
	tt := newTestTools(t)
	lim := NewLimiter(3)
	sink := &memSink{}
	ch := Standard(tt.reg, &StandardOptions{Limiter: lim, AuditSink: sink, DefaultTimeout: time.Second})
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"echo", "panic", "nope"}[i%3]
			_, err := ch.CallTool(context.Background(), call(name, `{"message":"x"}`, nil))
			key := "ok"
			if err != nil {
				key = errorKey(err)
			}
			mu.Lock()
			counts[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, 0, lim.InUse())
	total := 0
	for k, n := range counts {
		assert.Contains(t, []string{"ok", "INTERNAL", "RESOURCE_EXHAUSTED", "-32602"}, k)
		total += n
	}
	assert.Equal(t, 200, total)
	enters, exits := sink.events()
	assert.Equal(t, len(enters), len(exits))
}

func errorKey(err error) string {
	if pe, ok := err.(*mcp.Error); ok {
		return strconv.FormatInt(pe.Code, 10)
	}
	if se, ok := err.(*mcp.StructuredError); ok {
		return string(se.Code)
	}
	return err.Error()
}
