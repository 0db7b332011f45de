package main

import (
	"context"
	"fmt"
	"maps"
	"math"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// Configuration: keel's defaults with this server's name and version, then
// the JSON file named by -config (or $KEEL_CONFIG), then KEEL_* variables,
// loaded once at start. An invalid value stops the server with exit status
// 2 and a message naming the field. What the server takes from it:
//
//	mode                                   the tool surface (modes below)
//	server.name, server.version            serverInfo, health, server_ping
//	server.shutdownTimeoutMs               how long a stop waits for in-flight calls
//	tools.defaultTimeoutMs                 the default deadline of a call
//	tools.maxPayloadBytes                  the size bound of a call's arguments
//	tools.maxStateBytes                    the bound of each agent's state
//	tools.adminRegistrationEnabled and
//	security.dynamicRegistrationEnabled    admin/registerTool and admin/unregisterTool (both must be true)
//	tools.adminPolicy                      who may use the admin tools and shutdown
//	resources.maxConcurrentExecutions      concurrent tool calls
//	logging.level, logging.redactKeys      the stderr log
//
// Modes: FULL (the default) serves every tool but test-only ones; READONLY
// only tools that change nothing; TEST adds the test-only tool test_sleep;
// MINIMAL only health and server_ping. The lifecycle tool shutdown is
// outside the modes: the admin policy alone decides who sees and calls it.

// lifecycleModule is the module of shutdown, which the admin policy gates.
const lifecycleModule = "lifecycle"

// defaults returns this server's default configuration.
func defaults() keel.Config {
	c := keel.DefaultConfig()
	c.Server.Name = "agentops"
	c.Server.Version = version
	return c
}

// loadConfig loads the configuration: defaults, then file (or
// $KEEL_CONFIG when file is ""), then KEEL_* variables read with getenv.
func loadConfig(file string, getenv func(string) string) (keel.Config, error) {
	d := defaults()
	return keel.LoadConfig(&keel.LoadOptions{File: file, Getenv: getenv, Defaults: &d})
}

// newAdmin returns the administrative tools of reg as cfg configures them:
// they exist only with both registration switches on; tools.adminPolicy
// says who may use them (deny_all by default). Tool types: echo, health
// and agentProxy (a message to one of the coordinator's agents).
func newAdmin(cfg keel.Config, reg *registry.Registry, coord *agents.Coordinator, health *middleware.HealthOptions) (*middleware.Admin, error) {
	types := maps.Clone(middleware.DefaultToolTypes())
	types[middleware.HealthToolTypeName] = middleware.HealthToolType(health)
	types["agentProxy"] = func(name, description string) (*mcp.Tool, registry.ToolHandler) {
		return agents.AgentProxyTool(coord)
	}
	a, err := middleware.NewAdmin(reg, &middleware.AdminOptions{
		AdminRegistrationEnabled:   cfg.Tools.AdminRegistrationEnabled,
		DynamicRegistrationEnabled: cfg.Security.DynamicRegistrationEnabled,
		Policy:                     middleware.AdminPolicyMode(cfg.Tools.AdminPolicy.Mode),
		TokenEnvVar:                cfg.Tools.AdminPolicy.TokenEnvVar,
		ToolTypes:                  types,
	})
	if err != nil {
		return nil, fmt.Errorf("admin tools: %w", err)
	}
	return a, nil
}

// admission is the server's admission policy: the lifecycle tools are
// admitted by the admin policy alone (in every mode: stopping the server is
// an operator's decision, not a tool-surface one); every other tool by the
// mode.
func admission(mode keel.Mode, admin *middleware.Admin) middleware.AdmissionPolicy {
	modes := middleware.ModePolicy(middleware.Mode(mode))
	return middleware.AdmissionFunc(func(ctx context.Context, t *registry.Tool, ac middleware.AdmissionContext) error {
		if middleware.ToolModule(t) == lifecycleModule {
			return admin.Authorize(ctx, t, ac)
		}
		return modes.Admit(ctx, t, ac)
	})
}

// standardOptions returns the call chain's options for cfg.
func standardOptions(cfg keel.Config, lim *middleware.Limiter) middleware.StandardOptions {
	return middleware.StandardOptions{
		MaxPayloadBytes: int(min(cfg.Tools.MaxPayloadBytes, math.MaxInt)),
		Limiter:         lim,
		DefaultTimeout:  cfg.Tools.DefaultTimeout(),
	}
}
