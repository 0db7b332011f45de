package middleware

import (
	"context"
	"fmt"
	"time"

	"github.com/keelmcp/keel/registry"
)

// Mode is the runtime mode server_ping reports.
type Mode string

// Runtime modes.
const (
	// ModeFull: every tool is available.
	ModeFull Mode = "FULL"
	// ModeReadOnly: only tools that change nothing.
	ModeReadOnly Mode = "READONLY"
	// ModeTest: a test deployment.
	ModeTest Mode = "TEST"
	// ModeMinimal: the smallest tool surface.
	ModeMinimal Mode = "MINIMAL"
)

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeFull, ModeReadOnly, ModeTest, ModeMinimal:
		return true
	}
	return false
}

// PingResult is server_ping's result.
type PingResult struct {
	Version  string `json:"version"`
	Mode     Mode   `json:"mode" jsonschema:"enum=FULL,enum=READONLY,enum=TEST,enum=MINIMAL"`
	UptimeMs int64  `json:"uptime_ms" jsonschema:"minimum=0"`
}

// PingInput is server_ping's (empty) input.
type PingInput struct{}

// PingOptions configure server_ping. Nil means all defaults.
type PingOptions struct {
	// Version is reported as is (default "0.0.0").
	Version string
	// Mode is reported as is (default ModeFull); anything but the four
	// modes is a registration error.
	Mode Mode
	// Now is the clock (nil = time.Now); tests inject a fake one.
	Now func() time.Time
	// Start is when the server booted (zero = Now() at registration);
	// uptime_ms is floor(Now() - Start) in milliseconds, never negative.
	Start time.Time
	// ToolName is the name the tool is registered under (default
	// "server_ping").
	ToolName string
}

// RegisterPingTool registers the built-in server_ping tool in
// reg: no arguments; the result, with an output schema, is a PingResult.
func RegisterPingTool(reg *registry.Registry, opts *PingOptions) error {
	var o PingOptions
	if opts != nil {
		o = *opts
	}
	if o.Version == "" {
		o.Version = "0.0.0"
	}
	if o.Mode == "" {
		o.Mode = ModeFull
	}
	if !o.Mode.Valid() {
		return fmt.Errorf("middleware: server_ping: invalid mode %q (want FULL, READONLY, TEST or MINIMAL)", o.Mode)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Start.IsZero() {
		o.Start = o.Now()
	}
	if o.ToolName == "" {
		o.ToolName = "server_ping"
	}
	return registry.Register(reg, o.ToolName,
		"Reports the server's version, runtime mode and uptime in milliseconds.",
		func(ctx context.Context, _ PingInput) (PingResult, error) {
			return PingResult{Version: o.Version, Mode: o.Mode, UptimeMs: max(o.Now().Sub(o.Start).Milliseconds(), 0)}, nil
		},
		&registry.ToolOptions{Title: "Server ping", ReadOnly: true})
}
