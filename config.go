package keel

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/keelmcp/keel/transport"
)

// Mode is the runtime mode of a server: which tool surface it
// admits. The config loader only checks that it is one of the four; what each
// mode admits is up to the server.
type Mode string

// Runtime modes.
const (
	ModeFull     Mode = "FULL"     // every tool (the default)
	ModeReadOnly Mode = "READONLY" // read-only tools only
	ModeTest     Mode = "TEST"     // tests: deterministic behaviour, test tools
	ModeMinimal  Mode = "MINIMAL"  // the smallest surface, e.g. server_ping and health
)

// AdminPolicyMode says who may call administrative tools.
type AdminPolicyMode string

// Admin policy modes.
const (
	AdminDenyAll        AdminPolicyMode = "deny_all"         // nobody (the default)
	AdminLocalStdioOnly AdminPolicyMode = "local_stdio_only" // only clients on the stdio transport
	AdminToken          AdminPolicyMode = "token"            // clients presenting the token named by TokenEnvVar
)

// Log levels accepted by LoggingConfig.Level.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// Config is the configuration of a starter server: server, tools, resources,
// logging, security and aacp settings, plus the runtime mode. Its JSON form
// uses camelCase member names; DefaultConfig gives the defaults and LoadConfig
// reads it from a JSON file and the environment.
type Config struct {
	// Mode is the runtime mode: FULL (default), READONLY, TEST or MINIMAL.
	Mode      Mode            `json:"mode"`
	Server    ServerConfig    `json:"server"`
	Tools     ToolsConfig     `json:"tools"`
	Resources ResourcesConfig `json:"resources"`
	Logging   LoggingConfig   `json:"logging"`
	Security  SecurityConfig  `json:"security"`
	AACP      AACPConfig      `json:"aacp"`
}

// ServerConfig is the "server" section of Config.
type ServerConfig struct {
	// Name is the server's name as announced to clients (serverInfo.name).
	// It must not be empty. Default "keel".
	Name string `json:"name"`
	// Version is the server's version (serverInfo.version). Default "0.0.0".
	Version string `json:"version"`
	// ShutdownTimeoutMs bounds a graceful shutdown, in milliseconds.
	// Default 10000.
	ShutdownTimeoutMs int64 `json:"shutdownTimeoutMs"`
	// StateKey is the secret that seals the requestState of input-required
	// results, in standard base64 (RFC 4648 with padding) of at least
	// MinStateKeyBytes random bytes, such as the output of
	// `openssl rand -base64 32`. Every replica of a server must have the
	// same key, so that a state sealed by one replica opens on another.
	// Default "": a random key per process (states do not survive a
	// restart and do not cross replicas). Use StateKeyBytes to read it.
	StateKey Secret `json:"stateKey"`
}

// MinStateKeyBytes is the shortest server.stateKey accepted, in bytes after
// base64 decoding: 32, the size of the AES-256 key derived from it.
const MinStateKeyBytes = 32

// StateKeyBytes returns the decoded server.stateKey: nil when it is unset,
// or an error (a *ConfigError that does not quote the value) when it is not
// standard base64 of at least MinStateKeyBytes bytes. Pass the bytes to
// mcp.ServerOptions.StateKey.
func (s ServerConfig) StateKeyBytes() ([]byte, error) {
	key, msg := decodeStateKey(s.StateKey)
	if msg != "" {
		return nil, &ConfigError{Field: "server.stateKey", Message: msg}
	}
	return key, nil
}

// decodeStateKey decodes a state key, or says what is wrong with it without
// quoting it.
func decodeStateKey(s Secret) ([]byte, string) {
	v := strings.TrimSpace(string(s))
	if v == "" {
		return nil, ""
	}
	const want = "must be standard base64 (with padding) of at least %d random bytes, e.g. from `openssl rand -base64 32`"
	key, err := base64.StdEncoding.Strict().DecodeString(v)
	if err != nil {
		return nil, fmt.Sprintf(want+"; the value (%d characters, not shown) is not standard base64", MinStateKeyBytes, len(v))
	}
	if len(key) < MinStateKeyBytes {
		return nil, fmt.Sprintf(want+"; the value (not shown) decodes to %d bytes, too short to be safe", MinStateKeyBytes, len(key))
	}
	return key, ""
}

// Secret is a configuration value that must never be shown, such as
// server.stateKey. Its string is the value itself; every way of printing
// it (fmt verbs, log/slog, JSON encoding) gives RedactedValue instead, or
// "" when it is empty, so that logging a whole Config is safe. Read the
// value with a string conversion, string(s).
type Secret string

// shown is what every printed form of s shows.
func (s Secret) shown() string {
	if s == "" {
		return ""
	}
	return RedactedValue
}

// String returns RedactedValue, or "" when s is empty.
func (s Secret) String() string { return s.shown() }

// GoString returns RedactedValue quoted, or "" quoted when s is empty.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.shown()) }

// Format prints RedactedValue (or "" when s is empty) for every fmt verb.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", s.shown())
	case 'v':
		if f.Flag('#') {
			io.WriteString(f, s.GoString())
			return
		}
		io.WriteString(f, s.shown())
	default:
		io.WriteString(f, s.shown())
	}
}

// LogValue returns RedactedValue as a string (or "" when s is empty), so
// that no slog handler logs the secret.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.shown()) }

// MarshalJSON encodes RedactedValue (or "" when s is empty): an encoded
// Config never carries the secret. Decoding reads the value itself.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", s.shown())), nil }

// ToolsConfig is the "tools" section of Config.
type ToolsConfig struct {
	// DefaultTimeoutMs is the deadline of a tool call whose tool has none
	// of its own, in milliseconds: the handler's context ends then, and
	// the answer is TIMEOUT (middleware.Deadline). Default 30000.
	DefaultTimeoutMs int64 `json:"defaultTimeoutMs"`
	// MaxPayloadBytes bounds the UTF-8 size of a call's arguments.
	// Default 1048576 (1 MiB).
	MaxPayloadBytes int64 `json:"maxPayloadBytes"`
	// MaxStateBytes bounds the state an agent may keep. Default 262144 (256
	// KiB).
	MaxStateBytes int64 `json:"maxStateBytes"`
	// AdminRegistrationEnabled is one of the two switches of dynamic tool
	// registration; see Config.DynamicRegistrationEffective. Default false.
	AdminRegistrationEnabled bool `json:"adminRegistrationEnabled"`
	// AdminPolicy says who may call administrative tools.
	AdminPolicy AdminPolicy `json:"adminPolicy"`
}

// AdminPolicy is the "tools.adminPolicy" section of Config.
type AdminPolicy struct {
	// Mode is deny_all (default), local_stdio_only or token.
	Mode AdminPolicyMode `json:"mode"`
	// TokenEnvVar names the environment variable holding the admin token;
	// required when Mode is token. The token itself never appears in Config.
	TokenEnvVar string `json:"tokenEnvVar,omitempty"`
}

// ResourcesConfig is the "resources" section of Config.
type ResourcesConfig struct {
	// MaxConcurrentExecutions bounds the tool calls running at once.
	// Default 10.
	MaxConcurrentExecutions int `json:"maxConcurrentExecutions"`
}

// LoggingConfig is the "logging" section of Config.
type LoggingConfig struct {
	// Level is the minimum level logged: debug, info (default), warn or error.
	Level string `json:"level"`
	// RedactKeys is the case-insensitive denylist of keys whose values are
	// redacted from logs. Default DefaultRedactKeys(). A list from the file
	// or the environment replaces the default list, it does not extend it;
	// include the defaults to keep them. An empty list redacts nothing.
	RedactKeys []string `json:"redactKeys"`
}

// SecurityConfig is the "security" section of Config.
type SecurityConfig struct {
	// DynamicRegistrationEnabled is the other switch of dynamic tool
	// registration; see Config.DynamicRegistrationEffective. Default false.
	DynamicRegistrationEnabled bool `json:"dynamicRegistrationEnabled"`
	// AllowArbitraryCodeTools permits tools that run caller-supplied code.
	// Default false.
	AllowArbitraryCodeTools bool `json:"allowArbitraryCodeTools"`
}

// AACPConfig is the "aacp" section of Config (agent-to-agent messaging).
type AACPConfig struct {
	// DefaultTtlMs is the default time to live of a message, in
	// milliseconds. Default 86400000 (24 hours).
	DefaultTtlMs int64 `json:"defaultTtlMs"`
}

// DefaultConfig returns the default configuration.
// Each call returns a fresh value that the caller may modify.
func DefaultConfig() Config {
	return Config{
		Mode: ModeFull,
		Server: ServerConfig{
			Name:              "keel",
			Version:           "0.0.0",
			ShutdownTimeoutMs: 10_000,
		},
		Tools: ToolsConfig{
			DefaultTimeoutMs: 30_000,
			MaxPayloadBytes:  1 << 20,
			MaxStateBytes:    256 << 10,
			AdminPolicy:      AdminPolicy{Mode: AdminDenyAll},
		},
		Resources: ResourcesConfig{MaxConcurrentExecutions: 10},
		Logging:   LoggingConfig{Level: LevelInfo, RedactKeys: DefaultRedactKeys()},
		AACP:      AACPConfig{DefaultTtlMs: 86_400_000},
	}
}

// clone returns a copy of c that shares no memory with it.
func (c Config) clone() Config {
	c.Logging.RedactKeys = slices.Clone(c.Logging.RedactKeys)
	return c
}

// DynamicRegistrationEffective reports whether dynamic tool registration is
// on: only when both tools.adminRegistrationEnabled and
// security.dynamicRegistrationEnabled are true.
func (c Config) DynamicRegistrationEffective() bool {
	return c.Tools.AdminRegistrationEnabled && c.Security.DynamicRegistrationEnabled
}

// SlogLevel returns logging.level as a slog.Level (info when the level is
// not one of debug, info, warn, error).
func (c Config) SlogLevel() slog.Level {
	switch c.Logging.Level {
	case LevelDebug:
		return slog.LevelDebug
	case LevelWarn:
		return slog.LevelWarn
	case LevelError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Logger returns a logger writing JSON lines to w at logging.level, through
// NewRedactingHandler with logging.redactKeys (the default denylist when nil).
// On a stdio server, w must not be os.Stdout: use os.Stderr.
func (c Config) Logger(w io.Writer) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: c.SlogLevel()})
	return slog.New(NewRedactingHandler(h, &RedactOptions{Keys: c.Logging.RedactKeys}))
}

// ShutdownTimeout returns ShutdownTimeoutMs as a time.Duration.
func (s ServerConfig) ShutdownTimeout() time.Duration { return ms(s.ShutdownTimeoutMs) }

// DefaultTimeout returns DefaultTimeoutMs as a time.Duration.
func (t ToolsConfig) DefaultTimeout() time.Duration { return ms(t.DefaultTimeoutMs) }

// DefaultTTL returns DefaultTtlMs as a time.Duration.
func (a AACPConfig) DefaultTTL() time.Duration { return ms(a.DefaultTtlMs) }

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// maxMs is the largest millisecond count a time.Duration holds.
const maxMs = math.MaxInt64 / int64(time.Millisecond)

// ConfigError reports one invalid configuration value. LoadConfig and
// Validate return one per problem (joined with errors.Join when there are
// several); find them with errors.As.
type ConfigError struct {
	// Field is the JSON path of the field, such as "tools.defaultTimeoutMs",
	// or "" when the problem is not about one field (a file that is not JSON).
	Field string
	// Env is the environment variable that set the value, if one did.
	Env string
	// File is the configuration file at fault, for problems found while
	// decoding it.
	File string
	// Message says what is wrong, such as `must be > 0 (got -5)`.
	Message string
}

// Error formats the error as `config: <field> (<env>): <message>`, for
// example `config: tools.defaultTimeoutMs: must be > 0 (got -5)`.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.File != "" {
		fmt.Fprintf(&b, "file %q: ", e.File)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		if e.Env != "" {
			fmt.Fprintf(&b, " (%s)", e.Env)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Validate checks c and returns a *ConfigError for every invalid field
// (joined with errors.Join), or nil. Rules: mode is one of the four modes;
// server.name is not blank; server.shutdownTimeoutMs, tools.defaultTimeoutMs,
// tools.maxPayloadBytes, tools.maxStateBytes,
// resources.maxConcurrentExecutions and aacp.defaultTtlMs are > 0 (and
// millisecond fields fit a time.Duration); tools.adminPolicy.mode is
// deny_all, local_stdio_only or token, and token requires
// tools.adminPolicy.tokenEnvVar; logging.level is debug, info, warn or error;
// no logging.redactKeys entry is empty; server.stateKey, when set, is
// standard base64 of at least MinStateKeyBytes bytes (its value is never
// quoted in the error).
func (c Config) Validate() error { return c.validate(nil) }

// validate is Validate, naming the environment variable that set a field
// (env maps field paths to variable names).
func (c Config) validate(env map[string]string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Field: field, Env: env[field], Message: fmt.Sprintf(format, args...)})
	}
	positive := func(field string, v int64) {
		if v <= 0 {
			bad(field, "must be > 0 (got %d)", v)
		}
	}
	positiveMs := func(field string, v int64) {
		positive(field, v)
		if v > maxMs {
			bad(field, "must be at most %d (got %d)", maxMs, v)
		}
	}
	switch c.Mode {
	case ModeFull, ModeReadOnly, ModeTest, ModeMinimal:
	default:
		bad("mode", "must be one of FULL, READONLY, TEST, MINIMAL (got %q)", c.Mode)
	}
	if strings.TrimSpace(c.Server.Name) == "" {
		bad("server.name", "must not be empty")
	}
	positiveMs("server.shutdownTimeoutMs", c.Server.ShutdownTimeoutMs)
	if _, msg := decodeStateKey(c.Server.StateKey); msg != "" {
		bad("server.stateKey", "%s", msg)
	}
	positiveMs("tools.defaultTimeoutMs", c.Tools.DefaultTimeoutMs)
	positive("tools.maxPayloadBytes", c.Tools.MaxPayloadBytes)
	if c.Tools.MaxPayloadBytes > transport.DefaultMaxMessageBytes {
		bad("tools.maxPayloadBytes", "must be at most %d, the transports' message limit (transport.DefaultMaxMessageBytes): larger arguments cannot arrive (got %d)",
			transport.DefaultMaxMessageBytes, c.Tools.MaxPayloadBytes)
	}
	positive("tools.maxStateBytes", c.Tools.MaxStateBytes)
	switch c.Tools.AdminPolicy.Mode {
	case AdminDenyAll, AdminLocalStdioOnly:
	case AdminToken:
		if strings.TrimSpace(c.Tools.AdminPolicy.TokenEnvVar) == "" {
			bad("tools.adminPolicy.tokenEnvVar", "required when tools.adminPolicy.mode is %q", AdminToken)
		}
	default:
		bad("tools.adminPolicy.mode", "must be one of deny_all, local_stdio_only, token (got %q)", c.Tools.AdminPolicy.Mode)
	}
	positive("resources.maxConcurrentExecutions", int64(c.Resources.MaxConcurrentExecutions))
	switch c.Logging.Level {
	case LevelDebug, LevelInfo, LevelWarn, LevelError:
	default:
		bad("logging.level", "must be one of debug, info, warn, error (got %q)", c.Logging.Level)
	}
	for i, k := range c.Logging.RedactKeys {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, &ConfigError{
				Field:   fmt.Sprintf("logging.redactKeys[%d]", i),
				Env:     env["logging.redactKeys"],
				Message: "must not be empty",
			})
		}
	}
	positiveMs("aacp.defaultTtlMs", c.AACP.DefaultTtlMs)
	return errors.Join(errs...)
}

// LoadOptions configures LoadConfig. nil means: defaults, the file named by
// $KEEL_CONFIG if set, the process environment.
type LoadOptions struct {
	// File is the JSON configuration file. "" means the file named by the
	// KEEL_CONFIG environment variable, or none when that is unset too.
	File string
	// Getenv reads environment variables; nil means os.Getenv. Tests inject
	// a map lookup here.
	Getenv func(string) string
	// Defaults is the configuration the file and the environment are
	// applied to; nil means DefaultConfig(). It is not modified.
	Defaults *Config
}

// LoadConfig builds the configuration of a starter server: defaults, then
// the JSON file, then KEEL_* environment variables, each overriding the one
// before; then it validates the result (see Config.Validate). It fails fast:
// any problem is returned as one or more *ConfigError naming the field (and
// the variable or file that set it), together with a zero Config.
//
// The file is decoded strictly: member names are case-sensitive, an unknown
// member is an error naming it, duplicate members and invalid UTF-8 are
// rejected. Members the file omits keep their defaults; a list (redactKeys)
// replaces the default list.
//
// Environment variables are named after the JSON path, in upper snake case
// with a KEEL_ prefix. An empty variable counts as unset. Booleans take
// strconv.ParseBool forms (true, false, 1, 0, ...); numbers are base-10
// integers; KEEL_LOGGING_REDACT_KEYS is a comma-separated list (blanks
// around entries and empty entries dropped, so "," sets an empty list):
//
//	KEEL_MODE                                  mode
//	KEEL_SERVER_NAME                           server.name
//	KEEL_SERVER_VERSION                        server.version
//	KEEL_SERVER_SHUTDOWN_TIMEOUT_MS            server.shutdownTimeoutMs
//	KEEL_SERVER_STATE_KEY                      server.stateKey (a secret)
//	KEEL_TOOLS_DEFAULT_TIMEOUT_MS              tools.defaultTimeoutMs
//	KEEL_TOOLS_MAX_PAYLOAD_BYTES               tools.maxPayloadBytes
//	KEEL_TOOLS_MAX_STATE_BYTES                 tools.maxStateBytes
//	KEEL_TOOLS_ADMIN_REGISTRATION_ENABLED      tools.adminRegistrationEnabled
//	KEEL_TOOLS_ADMIN_POLICY_MODE               tools.adminPolicy.mode
//	KEEL_TOOLS_ADMIN_POLICY_TOKEN_ENV_VAR      tools.adminPolicy.tokenEnvVar
//	KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS   resources.maxConcurrentExecutions
//	KEEL_LOGGING_LEVEL                         logging.level
//	KEEL_LOGGING_REDACT_KEYS                   logging.redactKeys
//	KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED security.dynamicRegistrationEnabled
//	KEEL_SECURITY_ALLOW_ARBITRARY_CODE_TOOLS   security.allowArbitraryCodeTools
//	KEEL_AACP_DEFAULT_TTL_MS                   aacp.defaultTtlMs
//
// KEEL_CONFIG names the configuration file when LoadOptions.File is empty.
func LoadConfig(opts *LoadOptions) (Config, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := DefaultConfig()
	if o.Defaults != nil {
		cfg = o.Defaults.clone()
	}
	file := o.File
	if file == "" {
		file = getenv(EnvConfigFile)
	}
	if file != "" {
		if err := decodeConfigFile(file, &cfg); err != nil {
			return Config{}, err
		}
	}
	env, err := applyEnv(&cfg, getenv)
	if err != nil {
		return Config{}, err
	}
	if err := cfg.validate(env); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
