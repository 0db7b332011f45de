package middleware

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProbe reports the current scheduling delay: how late the Go runtime
// runs work that is ready (the Go counterpart of Node's event-loop delay).
type DelayProbe interface {
	Delay() time.Duration
}

// DelayMonitor measures scheduling delay continuously: a goroutine it owns
// sleeps on a timer for Interval, again and again, and records how late
// each wake-up is. Delay reports the largest lateness among the recent
// samples (the last Window of them), so a stall stays visible for a while.
// Start it with Start and end it with Stop (or by cancelling Start's
// context).
type DelayMonitor struct {
	interval time.Duration
	window   int

	delay atomic.Int64 // nanoseconds

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewDelayMonitor returns a stopped monitor sampling every interval (default
// 100ms when <= 0) and reporting the maximum over the last window samples
// (default 10 when <= 0).
func NewDelayMonitor(interval time.Duration, window int) *DelayMonitor {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if window <= 0 {
		window = 10
	}
	return &DelayMonitor{interval: interval, window: window}
}

// ErrMonitorRunning is returned by Start on a monitor that is running.
var ErrMonitorRunning = errors.New("middleware: delay monitor already running")

// Start starts the sampling goroutine, which runs until Stop is called or ctx
// is done.
func (m *DelayMonitor) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done != nil {
		select {
		case <-m.done: // ended by its context; may start again
		default:
			return ErrMonitorRunning
		}
	}
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan struct{})
	go m.run(ctx, m.done)
	return nil
}

// Stop ends the sampling goroutine and waits for it to return. Stopping a
// monitor that is not running does nothing.
func (m *DelayMonitor) Stop() {
	m.mu.Lock()
	cancel, done := m.cancel, m.done
	m.cancel, m.done = nil, nil
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Delay returns the largest scheduling delay among the recent samples (0
// before the first sample).
func (m *DelayMonitor) Delay() time.Duration { return time.Duration(m.delay.Load()) }

func (m *DelayMonitor) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	samples := make([]time.Duration, m.window)
	t := time.NewTimer(m.interval)
	defer t.Stop()
	for i := 0; ; i++ {
		want := time.Now().Add(m.interval)
		t.Reset(m.interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		late := max(time.Since(want), 0)
		samples[i%len(samples)] = late
		worst := late
		for _, s := range samples {
			worst = max(worst, s)
		}
		m.delay.Store(int64(worst))
	}
}

// MeasureSchedulingDelay measures the scheduling delay once, on demand: it
// sleeps on a 1ms timer and returns how late the wake-up came. The health
// tool uses it when no DelayProbe is configured.
func MeasureSchedulingDelay() time.Duration {
	const d = time.Millisecond
	start := time.Now()
	t := time.NewTimer(d)
	<-t.C
	return max(time.Since(start)-d, 0)
}
