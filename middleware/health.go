package middleware

import (
	"context"
	"runtime/metrics"
	"time"

	"github.com/keelmcp/keel/registry"
)

// HealthStatus is the overall status the health tool reports.
type HealthStatus string

// Health statuses, by threshold (see Status).
const (
	// StatusHealthy: every metric within normal bounds.
	StatusHealthy HealthStatus = "healthy"
	// StatusDegraded: concurrency above 80% of the slots, or scheduling
	// delay above 100ms.
	StatusDegraded HealthStatus = "degraded"
	// StatusUnhealthy: every slot taken, scheduling delay above 500ms, or 3
	// or more consecutive RESOURCE_EXHAUSTED rejections.
	StatusUnhealthy HealthStatus = "unhealthy"
)

// ResourceTelemetry is the resources member of the health report: memory,
// scheduling delay and concurrent executions against their maximum.
type ResourceTelemetry struct {
	// MemoryUsageBytes is the memory the Go runtime holds from the OS
	// (runtime/metrics /memory/classes/total minus released heap).
	MemoryUsageBytes uint64 `json:"memoryUsageBytes" jsonschema:"minimum=0"`
	// EventLoopDelayMs is the scheduling delay in milliseconds: how late a
	// timer wake-up runs (see DelayProbe).
	EventLoopDelayMs float64 `json:"eventLoopDelayMs" jsonschema:"minimum=0"`
	// ConcurrentExecutions is the number of tool calls holding a
	// concurrency slot, the health call itself included when it runs
	// through the same Limiter.
	ConcurrentExecutions int `json:"concurrentExecutions" jsonschema:"minimum=0"`
	// MaxConcurrentExecutions is the number of slots.
	MaxConcurrentExecutions int `json:"maxConcurrentExecutions" jsonschema:"minimum=0"`
}

// Status applies the health thresholds to t and the number of consecutive
// RESOURCE_EXHAUSTED rejections:
//
//	unhealthy: concurrent == max, or delay > 500ms, or 3+ consecutive RESOURCE_EXHAUSTED
//	degraded:  concurrent > 80% of max, or delay > 100ms
//	healthy:   otherwise
//
// A max of 0 (unlimited) never trips the concurrency thresholds.
func (t ResourceTelemetry) Status(consecutiveExhausted int64) HealthStatus {
	full := t.MaxConcurrentExecutions > 0 && t.ConcurrentExecutions >= t.MaxConcurrentExecutions
	busy := t.MaxConcurrentExecutions > 0 && t.ConcurrentExecutions*5 > t.MaxConcurrentExecutions*4
	switch {
	case full || t.EventLoopDelayMs > 500 || consecutiveExhausted >= 3:
		return StatusUnhealthy
	case busy || t.EventLoopDelayMs > 100:
		return StatusDegraded
	}
	return StatusHealthy
}

// HealthReport is the health tool's result: server, configured limits,
// resource telemetry and status, plus the RESOURCE_EXHAUSTED counter.
type HealthReport struct {
	Server                 HealthServer      `json:"server"`
	Config                 HealthConfig      `json:"config"`
	Resources              ResourceTelemetry `json:"resources"`
	Status                 HealthStatus      `json:"status" jsonschema:"enum=healthy,enum=degraded,enum=unhealthy"`
	ResourceExhaustedCount int64             `json:"resourceExhaustedCount" jsonschema:"minimum=0"`
}

// HealthServer names the server in a HealthReport.
type HealthServer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// HealthConfig is the effective limits in a HealthReport.
type HealthConfig struct {
	ToolTimeoutMs           int64 `json:"toolTimeoutMs"`
	MaxConcurrentExecutions int   `json:"maxConcurrentExecutions"`
	MaxPayloadBytes         int64 `json:"maxPayloadBytes"`
	MaxStateBytes           int64 `json:"maxStateBytes"`
}

// DefaultMaxStateBytes is the default of HealthOptions.MaxStateBytes (the
// configuration's tools.maxStateBytes, 256 KiB).
const DefaultMaxStateBytes = 256 << 10

// HealthOptions configure the health tool. Nil means all defaults. Give it
// the same values (and the same Limiter) as the chain that serves it.
type HealthOptions struct {
	// Name and Version identify the server (default "keel", "0.0.0").
	Name    string
	Version string
	// ToolTimeout, MaxPayloadBytes and MaxStateBytes are reported in the
	// config member (defaults: DefaultTimeout, DefaultMaxPayloadBytes,
	// DefaultMaxStateBytes).
	ToolTimeout     time.Duration
	MaxPayloadBytes int64
	MaxStateBytes   int64
	// Limiter supplies the concurrency numbers; nil reports 0 of
	// MaxConcurrent.
	Limiter *Limiter
	// MaxConcurrent is reported when Limiter is nil (default
	// DefaultMaxConcurrent).
	MaxConcurrent int
	// Delay supplies the scheduling delay (a *DelayMonitor, for example);
	// nil measures it on demand with MeasureSchedulingDelay (about 1ms per
	// health call).
	Delay DelayProbe
	// MemoryUsage reports memory in use (nil = runtime/metrics).
	MemoryUsage func() uint64
	// ExhaustedCount reports consecutive RESOURCE_EXHAUSTED rejections (nil
	// = ResourceExhaustedCount).
	ExhaustedCount func() int64
	// ToolName is the name the tool is registered under (default "health").
	ToolName string
}

// Health computes a health report from opts (nil = defaults) now. The health
// tool returns exactly this.
func Health(opts *HealthOptions) HealthReport {
	o := healthDefaults(opts)
	return o.report()
}

func healthDefaults(opts *HealthOptions) HealthOptions {
	var o HealthOptions
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "keel"
	}
	if o.Version == "" {
		o.Version = "0.0.0"
	}
	if o.ToolTimeout == 0 {
		o.ToolTimeout = DefaultTimeout
	}
	if o.MaxPayloadBytes == 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if o.MaxStateBytes == 0 {
		o.MaxStateBytes = DefaultMaxStateBytes
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MemoryUsage == nil {
		o.MemoryUsage = memoryUsage
	}
	if o.ExhaustedCount == nil {
		o.ExhaustedCount = ResourceExhaustedCount
	}
	if o.ToolName == "" {
		o.ToolName = "health"
	}
	return o
}

func (o *HealthOptions) report() HealthReport {
	var delay time.Duration
	if o.Delay != nil {
		delay = o.Delay.Delay()
	} else {
		delay = MeasureSchedulingDelay()
	}
	res := ResourceTelemetry{
		MemoryUsageBytes:        o.MemoryUsage(),
		EventLoopDelayMs:        float64(delay) / float64(time.Millisecond),
		MaxConcurrentExecutions: o.MaxConcurrent,
	}
	if o.Limiter != nil {
		res.ConcurrentExecutions = o.Limiter.InUse()
		res.MaxConcurrentExecutions = o.Limiter.Max()
	}
	n := o.ExhaustedCount()
	return HealthReport{
		Server: HealthServer{Name: o.Name, Version: o.Version},
		Config: HealthConfig{
			ToolTimeoutMs:           max(o.ToolTimeout.Milliseconds(), 0),
			MaxConcurrentExecutions: res.MaxConcurrentExecutions,
			MaxPayloadBytes:         max(o.MaxPayloadBytes, 0),
			MaxStateBytes:           max(o.MaxStateBytes, 0),
		},
		Resources:              res,
		Status:                 res.Status(n),
		ResourceExhaustedCount: n,
	}
}

// HealthInput is the health tool's (empty) input.
type HealthInput struct{}

// RegisterHealthTool registers the built-in health tool in reg:
// no arguments; its result, with an output schema, is a HealthReport.
func RegisterHealthTool(reg *registry.Registry, opts *HealthOptions) error {
	o := healthDefaults(opts)
	return registry.Register(reg, o.ToolName,
		"Reports server health: configured limits, memory, scheduling delay, concurrent executions, and a healthy/degraded/unhealthy status.",
		func(ctx context.Context, _ HealthInput) (HealthReport, error) { return o.report(), nil },
		&registry.ToolOptions{Title: "Server health", ReadOnly: true})
}

var memMetrics = []string{"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes"}

func memoryUsage() uint64 {
	s := []metrics.Sample{{Name: memMetrics[0]}, {Name: memMetrics[1]}}
	metrics.Read(s)
	var total, released uint64
	if s[0].Value.Kind() == metrics.KindUint64 {
		total = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		released = s[1].Value.Uint64()
	}
	if released > total {
		return 0
	}
	return total - released
}
