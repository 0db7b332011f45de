package keel

import (
	"bytes"
	"encoding/base64"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// envMap is an injectable Getenv.
func envMap(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keel.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	assert.Equal(t, ModeFull, c.Mode)
	assert.Equal(t, "keel", c.Server.Name)
	assert.Equal(t, int64(10000), c.Server.ShutdownTimeoutMs)
	assert.Equal(t, int64(30000), c.Tools.DefaultTimeoutMs)
	assert.Equal(t, int64(1048576), c.Tools.MaxPayloadBytes)
	assert.Equal(t, int64(262144), c.Tools.MaxStateBytes)
	assert.False(t, c.Tools.AdminRegistrationEnabled)
	assert.Equal(t, AdminPolicy{Mode: AdminDenyAll}, c.Tools.AdminPolicy)
	assert.Equal(t, 10, c.Resources.MaxConcurrentExecutions)
	assert.Equal(t, "info", c.Logging.Level)
	assert.Equal(t, DefaultRedactKeys(), c.Logging.RedactKeys)
	assert.False(t, c.Security.DynamicRegistrationEnabled)
	assert.False(t, c.Security.AllowArbitraryCodeTools)
	assert.Equal(t, int64(86400000), c.AACP.DefaultTtlMs)

	assert.Equal(t, 10*time.Second, c.Server.ShutdownTimeout())
	assert.Equal(t, 30*time.Second, c.Tools.DefaultTimeout())
	assert.Equal(t, 24*time.Hour, c.AACP.DefaultTTL())

	c.Logging.RedactKeys[0] = "changed"
	assert.Equal(t, "password", DefaultConfig().Logging.RedactKeys[0], "each call is fresh")
}

func TestLoadConfigPrecedence(t *testing.T) {
	file := writeFile(t, `{
		"server": {"name": "from-file", "version": "1.2.3"},
		"tools": {"defaultTimeoutMs": 5000, "maxPayloadBytes": 2048, "adminPolicy": {"mode": "token", "tokenEnvVar": "ADMIN_TOKEN"}},
		"logging": {"level": "debug", "redactKeys": ["ssn"]},
		"mode": "TEST"
	}`)
	tests := []struct {
		name  string
		opts  *LoadOptions
		check func(t *testing.T, c Config)
	}{
		{"defaults only", &LoadOptions{Getenv: envMap()}, func(t *testing.T, c Config) {
			assert.Equal(t, DefaultConfig(), c)
		}},
		{"file over defaults", &LoadOptions{File: file, Getenv: envMap()}, func(t *testing.T, c Config) {
			assert.Equal(t, "from-file", c.Server.Name)
			assert.Equal(t, "1.2.3", c.Server.Version)
			assert.Equal(t, int64(10000), c.Server.ShutdownTimeoutMs, "omitted member keeps its default")
			assert.Equal(t, int64(5000), c.Tools.DefaultTimeoutMs)
			assert.Equal(t, int64(2048), c.Tools.MaxPayloadBytes)
			assert.Equal(t, int64(262144), c.Tools.MaxStateBytes)
			assert.Equal(t, AdminPolicy{Mode: AdminToken, TokenEnvVar: "ADMIN_TOKEN"}, c.Tools.AdminPolicy)
			assert.Equal(t, "debug", c.Logging.Level)
			assert.Equal(t, []string{"ssn"}, c.Logging.RedactKeys, "a list replaces the default")
			assert.Equal(t, ModeTest, c.Mode)
		}},
		{"env over file", &LoadOptions{File: file, Getenv: envMap(
			"KEEL_SERVER_NAME", "from-env",
			"KEEL_TOOLS_DEFAULT_TIMEOUT_MS", " 7000 ",
			"KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS", "3",
			"KEEL_LOGGING_LEVEL", "warn",
			"KEEL_LOGGING_REDACT_KEYS", " password, ssn ,,dob",
			"KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED", "true",
			"KEEL_TOOLS_ADMIN_REGISTRATION_ENABLED", "1",
			"KEEL_TOOLS_ADMIN_POLICY_MODE", "local_stdio_only",
			"KEEL_MODE", "READONLY",
			"KEEL_AACP_DEFAULT_TTL_MS", "60000",
			"KEEL_SERVER_VERSION", "", // empty: unset
		)}, func(t *testing.T, c Config) {
			assert.Equal(t, "from-env", c.Server.Name)
			assert.Equal(t, "1.2.3", c.Server.Version)
			assert.Equal(t, int64(7000), c.Tools.DefaultTimeoutMs)
			assert.Equal(t, int64(2048), c.Tools.MaxPayloadBytes, "file value survives")
			assert.Equal(t, 3, c.Resources.MaxConcurrentExecutions)
			assert.Equal(t, "warn", c.Logging.Level)
			assert.Equal(t, []string{"password", "ssn", "dob"}, c.Logging.RedactKeys)
			assert.True(t, c.Security.DynamicRegistrationEnabled)
			assert.True(t, c.Tools.AdminRegistrationEnabled)
			assert.Equal(t, AdminLocalStdioOnly, c.Tools.AdminPolicy.Mode)
			assert.Equal(t, "ADMIN_TOKEN", c.Tools.AdminPolicy.TokenEnvVar)
			assert.Equal(t, ModeReadOnly, c.Mode)
			assert.Equal(t, int64(60000), c.AACP.DefaultTtlMs)
			assert.True(t, c.DynamicRegistrationEffective())
		}},
		{"KEEL_CONFIG names the file", &LoadOptions{Getenv: envMap("KEEL_CONFIG", file)}, func(t *testing.T, c Config) {
			assert.Equal(t, "from-file", c.Server.Name)
		}},
		{"File wins over KEEL_CONFIG", &LoadOptions{File: file, Getenv: envMap("KEEL_CONFIG", "/nonexistent.json")}, func(t *testing.T, c Config) {
			assert.Equal(t, "from-file", c.Server.Name)
		}},
		{"custom defaults", &LoadOptions{Getenv: envMap("KEEL_SERVER_VERSION", "9"), Defaults: &Config{
			Mode: ModeMinimal, Server: ServerConfig{Name: "mine", ShutdownTimeoutMs: 1},
			Tools:     ToolsConfig{DefaultTimeoutMs: 1, MaxPayloadBytes: 1, MaxStateBytes: 1, AdminPolicy: AdminPolicy{Mode: AdminDenyAll}},
			Resources: ResourcesConfig{MaxConcurrentExecutions: 1}, Logging: LoggingConfig{Level: "error"},
			AACP: AACPConfig{DefaultTtlMs: 1},
		}}, func(t *testing.T, c Config) {
			assert.Equal(t, "mine", c.Server.Name)
			assert.Equal(t, "9", c.Server.Version)
			assert.Equal(t, ModeMinimal, c.Mode)
			assert.Nil(t, c.Logging.RedactKeys)
		}},
		{"empty redact list from env", &LoadOptions{Getenv: envMap("KEEL_LOGGING_REDACT_KEYS", ",")}, func(t *testing.T, c Config) {
			assert.Equal(t, []string{}, c.Logging.RedactKeys)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.opts)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadConfigDoesNotModifyDefaults(t *testing.T) {
	d := DefaultConfig()
	d.Logging.RedactKeys = []string{"a", "b", "c"}
	file := writeFile(t, `{"logging": {"redactKeys": ["x"]}}`)
	c, err := LoadConfig(&LoadOptions{File: file, Getenv: envMap(), Defaults: &d})
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, c.Logging.RedactKeys)
	assert.Equal(t, []string{"a", "b", "c"}, d.Logging.RedactKeys)
}

func TestLoadConfigNilOptionsUsesProcessEnv(t *testing.T) {
	t.Setenv("KEEL_CONFIG", "")
	t.Setenv("KEEL_SERVER_NAME", "process-env")
	c, err := LoadConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, "process-env", c.Server.Name)
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"mode", func(c *Config) { c.Mode = "full" }, `config: mode: must be one of FULL, READONLY, TEST, MINIMAL (got "full")`},
		{"server.name", func(c *Config) { c.Server.Name = "  " }, `config: server.name: must not be empty`},
		{"server.shutdownTimeoutMs", func(c *Config) { c.Server.ShutdownTimeoutMs = 0 }, `config: server.shutdownTimeoutMs: must be > 0 (got 0)`},
		{"tools.defaultTimeoutMs", func(c *Config) { c.Tools.DefaultTimeoutMs = -5 }, `config: tools.defaultTimeoutMs: must be > 0 (got -5)`},
		{"tools.defaultTimeoutMs overflow", func(c *Config) { c.Tools.DefaultTimeoutMs = 1 << 62 }, `config: tools.defaultTimeoutMs: must be at most 9223372036854 (got 4611686018427387904)`},
		{"tools.maxPayloadBytes", func(c *Config) { c.Tools.MaxPayloadBytes = -1 }, `config: tools.maxPayloadBytes: must be > 0 (got -1)`},
		{"tools.maxPayloadBytes over the message limit", func(c *Config) { c.Tools.MaxPayloadBytes = 5 << 20 }, `config: tools.maxPayloadBytes: must be at most 4194304, the transports' message limit (transport.DefaultMaxMessageBytes): larger arguments cannot arrive (got 5242880)`},
		{"tools.maxStateBytes", func(c *Config) { c.Tools.MaxStateBytes = 0 }, `config: tools.maxStateBytes: must be > 0 (got 0)`},
		{"tools.adminPolicy.mode", func(c *Config) { c.Tools.AdminPolicy.Mode = "allow_all" }, `config: tools.adminPolicy.mode: must be one of deny_all, local_stdio_only, token (got "allow_all")`},
		{"tools.adminPolicy.tokenEnvVar", func(c *Config) { c.Tools.AdminPolicy.Mode = AdminToken }, `config: tools.adminPolicy.tokenEnvVar: required when tools.adminPolicy.mode is "token"`},
		{"resources.maxConcurrentExecutions", func(c *Config) { c.Resources.MaxConcurrentExecutions = 0 }, `config: resources.maxConcurrentExecutions: must be > 0 (got 0)`},
		{"logging.level", func(c *Config) { c.Logging.Level = "verbose" }, `config: logging.level: must be one of debug, info, warn, error (got "verbose")`},
		{"logging.redactKeys", func(c *Config) { c.Logging.RedactKeys = []string{"a", ""} }, `config: logging.redactKeys[1]: must not be empty`},
		{"aacp.defaultTtlMs", func(c *Config) { c.AACP.DefaultTtlMs = -1 }, `config: aacp.defaultTtlMs: must be > 0 (got -1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.True(t, strings.HasPrefix(tt.want, "config: "+ce.Field+":"), ce.Field)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.Tools.DefaultTimeoutMs = 0
	c.Logging.Level = "loud"
	err := c.Validate()
	require.Error(t, err)
	assert.Equal(t, "config: tools.defaultTimeoutMs: must be > 0 (got 0)\n"+
		`config: logging.level: must be one of debug, info, warn, error (got "loud")`, err.Error())
}

func TestLoadConfigInvalidValuesFromEnvNameTheVariable(t *testing.T) {
	_, err := LoadConfig(&LoadOptions{Getenv: envMap("KEEL_TOOLS_DEFAULT_TIMEOUT_MS", "-5")})
	require.EqualError(t, err, `config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): must be > 0 (got -5)`)

	file := writeFile(t, `{"tools": {"defaultTimeoutMs": -5}}`)
	_, err = LoadConfig(&LoadOptions{File: file, Getenv: envMap()})
	require.EqualError(t, err, `config: tools.defaultTimeoutMs: must be > 0 (got -5)`)
}

func TestLoadConfigBadEnv(t *testing.T) {
	tests := []struct {
		env, value, want string
	}{
		{"KEEL_TOOLS_DEFAULT_TIMEOUT_MS", "30s", `config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): invalid integer "30s"`},
		{"KEEL_TOOLS_MAX_PAYLOAD_BYTES", "1e6", `config: tools.maxPayloadBytes (KEEL_TOOLS_MAX_PAYLOAD_BYTES): invalid integer "1e6"`},
		{"KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS", "99999999999999999999", `config: resources.maxConcurrentExecutions (KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS): integer "99999999999999999999" out of range`},
		{"KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED", "yes", `config: security.dynamicRegistrationEnabled (KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED): invalid boolean "yes" (want true or false)`},
		{"KEEL_LOGGING_LEVEL", "trace", `config: logging.level (KEEL_LOGGING_LEVEL): must be one of debug, info, warn, error (got "trace")`},
		{"KEEL_MODE", "full", `config: mode (KEEL_MODE): must be one of FULL, READONLY, TEST, MINIMAL (got "full")`},
		{"KEEL_TOOLS_ADMIN_POLICY_MODE", "token", `config: tools.adminPolicy.tokenEnvVar: required when tools.adminPolicy.mode is "token"`},
		{"KEEL_SERVER_NAME", " ", `config: server.name (KEEL_SERVER_NAME): must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			c, err := LoadConfig(&LoadOptions{Getenv: envMap(tt.env, tt.value)})
			require.EqualError(t, err, tt.want)
			assert.Equal(t, Config{}, c)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
		})
	}

	// Every bad variable is reported, not only the first.
	_, err := LoadConfig(&LoadOptions{Getenv: envMap("KEEL_TOOLS_MAX_STATE_BYTES", "x", "KEEL_AACP_DEFAULT_TTL_MS", "y")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KEEL_TOOLS_MAX_STATE_BYTES")
	assert.Contains(t, err.Error(), "KEEL_AACP_DEFAULT_TTL_MS")
}

func TestLoadConfigBadFile(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"unknown member", `{"tools": {"defaultTimeoutMs": 1, "bogus": true}}`, `tools.bogus: unknown member`},
		{"unknown top-level member", `{"sever": {}}`, `sever: unknown member`},
		{"member names are case-sensitive", `{"Tools": {}}`, `Tools: unknown member`},
		{"nested case mismatch", `{"tools": {"DefaultTimeoutMs": 1}}`, `tools.DefaultTimeoutMs: unknown member`},
		{"duplicate member", `{"logging": {"level": "info", "level": "debug"}}`, `logging.level: duplicate member`},
		{"wrong type", `{"tools": {"defaultTimeoutMs": "30000"}}`, `tools.defaultTimeoutMs: cannot use JSON string as an integer`},
		{"fraction", `{"resources": {"maxConcurrentExecutions": 1.5}}`, `resources.maxConcurrentExecutions: cannot use JSON number 1.5 as an integer`},
		{"list entry type", `{"logging": {"redactKeys": ["a", 1]}}`, `logging.redactKeys[1]: cannot use JSON number as a string`},
		{"truncated", `{"tools": {`, `invalid JSON: `},
		{"invalid UTF-8", "{\"server\": {\"name\": \"\xff\"}}", `invalid JSON: `},
		{"not an object", `[]`, `cannot use JSON array as an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, tt.content)
			_, err := LoadConfig(&LoadOptions{File: file, Getenv: envMap()})
			require.Error(t, err)
			assert.Contains(t, err.Error(), `config: file "`+file+`": `+tt.want)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, file, ce.File)
		})
	}

	_, err := LoadConfig(&LoadOptions{File: "/nonexistent/keel.json", Getenv: envMap()})
	require.EqualError(t, err, `config: file "/nonexistent/keel.json": cannot read: no such file or directory`)
	assert.True(t, errors.As(err, new(*ConfigError)))
}

func TestEnvVarNames(t *testing.T) {
	var got []string
	for _, f := range envFields() {
		got = append(got, f.env+" "+f.path)
	}
	// The list documented on LoadConfig.
	assert.Equal(t, []string{
		"KEEL_MODE mode",
		"KEEL_SERVER_NAME server.name",
		"KEEL_SERVER_VERSION server.version",
		"KEEL_SERVER_SHUTDOWN_TIMEOUT_MS server.shutdownTimeoutMs",
		"KEEL_SERVER_STATE_KEY server.stateKey",
		"KEEL_TOOLS_DEFAULT_TIMEOUT_MS tools.defaultTimeoutMs",
		"KEEL_TOOLS_MAX_PAYLOAD_BYTES tools.maxPayloadBytes",
		"KEEL_TOOLS_MAX_STATE_BYTES tools.maxStateBytes",
		"KEEL_TOOLS_ADMIN_REGISTRATION_ENABLED tools.adminRegistrationEnabled",
		"KEEL_TOOLS_ADMIN_POLICY_MODE tools.adminPolicy.mode",
		"KEEL_TOOLS_ADMIN_POLICY_TOKEN_ENV_VAR tools.adminPolicy.tokenEnvVar",
		"KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS resources.maxConcurrentExecutions",
		"KEEL_LOGGING_LEVEL logging.level",
		"KEEL_LOGGING_REDACT_KEYS logging.redactKeys",
		"KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED security.dynamicRegistrationEnabled",
		"KEEL_SECURITY_ALLOW_ARBITRARY_CODE_TOOLS security.allowArbitraryCodeTools",
		"KEEL_AACP_DEFAULT_TTL_MS aacp.defaultTtlMs",
	}, got)

	for in, want := range map[string]string{"defaultTtlMs": "DEFAULT_TTL_MS", "aacp": "AACP", "tokenEnvVar": "TOKEN_ENV_VAR", "v2Name": "V2_NAME", "URL": "URL"} {
		assert.Equal(t, want, upperSnake(in), in)
	}
}

func TestDynamicRegistrationEffective(t *testing.T) {
	tests := []struct {
		admin, dynamic, want bool
	}{
		{false, false, false},
		{true, false, false},
		{false, true, false},
		{true, true, true},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		c.Tools.AdminRegistrationEnabled = tt.admin
		c.Security.DynamicRegistrationEnabled = tt.dynamic
		assert.Equal(t, tt.want, c.DynamicRegistrationEffective(), "admin=%v dynamic=%v", tt.admin, tt.dynamic)
	}
}

func TestSlogLevel(t *testing.T) {
	for level, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "bogus": slog.LevelInfo,
	} {
		c := DefaultConfig()
		c.Logging.Level = level
		assert.Equal(t, want, c.SlogLevel(), level)
	}
}

func TestConfigLogger(t *testing.T) {
	c := DefaultConfig()
	c.Logging.Level = "warn"
	c.Logging.RedactKeys = []string{"ssn"}
	var buf bytes.Buffer
	l := c.Logger(&buf)
	l.Info("dropped")
	l.Warn("kept\nline", "ssn", "123", "password", "visible")
	ls := lines(t, &buf)
	require.Len(t, ls, 1)
	assert.Equal(t, "WARN", ls[0]["level"])
	assert.Equal(t, `kept\u000aline`, ls[0]["msg"])
	assert.Equal(t, RedactedValue, ls[0]["ssn"])
	assert.Equal(t, "visible", ls[0]["password"], "the configured list replaces the default")

	buf.Reset()
	c.Logging.RedactKeys = nil
	c.Logger(&buf).Error("x", "password", "p")
	assert.Equal(t, RedactedValue, lastLine(t, &buf)["password"])
}

// stateKeyB64 is a valid server.stateKey: 32 bytes, standard base64. Its
// text is distinctive, so that a leak is easy to spot.
var (
	stateKeyRaw = []byte("0123456789abcdefghijklmnopqrstuv")
	stateKeyB64 = base64.StdEncoding.EncodeToString(stateKeyRaw)
)

func TestStateKey(t *testing.T) {
	assert.Equal(t, mcp.MinStateKeyBytes, MinStateKeyBytes, "the same bound as the mcp Server")
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	long := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfe}, 64))
	tests := []struct {
		name, file, env string
		want            []byte
		wantErr         []string
	}{
		{name: "unset", want: nil},
		{name: "env", env: stateKeyB64, want: stateKeyRaw},
		{name: "env, surrounding blanks", env: " " + stateKeyB64 + "\n", want: stateKeyRaw},
		{name: "file", file: `{"server": {"stateKey": "` + stateKeyB64 + `"}}`, want: stateKeyRaw},
		{name: "64 bytes", env: long, want: bytes.Repeat([]byte{0xfe}, 64)},
		{name: "env overrides file", file: `{"server": {"stateKey": "` + short + `"}}`, env: stateKeyB64, want: stateKeyRaw},
		{name: "too short", env: short, wantErr: []string{
			"config: server.stateKey (KEEL_SERVER_STATE_KEY): must be standard base64",
			"at least 32 random bytes", "decodes to 16 bytes, too short"}},
		{name: "too short in the file", file: `{"server": {"stateKey": "` + short + `"}}`, wantErr: []string{
			"config: server.stateKey: must be standard base64", "decodes to 16 bytes"}},
		{name: "not base64", env: "not base64: " + stateKeyB64, wantErr: []string{
			"server.stateKey (KEEL_SERVER_STATE_KEY)", "is not standard base64"}},
		{name: "url alphabet", env: base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xff}, 16)), wantErr: []string{
			"server.stateKey (KEEL_SERVER_STATE_KEY)", "is not standard base64"}},
		{name: "no padding", env: base64.RawStdEncoding.EncodeToString(stateKeyRaw), wantErr: []string{"is not standard base64"}},
		{name: "a number in the file", file: `{"server": {"stateKey": 31415926535897932384626}}`, wantErr: []string{
			"server.stateKey: cannot use JSON number as a string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &LoadOptions{Getenv: envMap("KEEL_SERVER_STATE_KEY", tt.env)}
			if tt.file != "" {
				opts.File = writeFile(t, tt.file)
			}
			c, err := LoadConfig(opts)
			if tt.wantErr != nil {
				require.Error(t, err)
				var ce *ConfigError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "server.stateKey", ce.Field)
				for _, w := range tt.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				for _, secret := range []string{stateKeyB64, short, strings.TrimRight(stateKeyB64, "="), "31415926535897932384626", "not base64"} {
					assert.NotContains(t, err.Error(), secret, "the value is never quoted")
				}
				return
			}
			require.NoError(t, err)
			key, err := c.Server.StateKeyBytes()
			require.NoError(t, err)
			assert.Equal(t, tt.want, key)
		})
	}

	t.Run("StateKeyBytes of an unvalidated config", func(t *testing.T) {
		c := DefaultConfig()
		c.Server.StateKey = Secret(short)
		key, err := c.Server.StateKeyBytes()
		assert.Nil(t, key)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "server.stateKey", ce.Field)
		assert.NotContains(t, err.Error(), short)
		require.Error(t, c.Validate())
	})
}

// A Config holding a state key can be printed and logged in every usual
// way without showing the key.
func TestStateKeyNeverShown(t *testing.T) {
	c := DefaultConfig()
	c.Server.StateKey = Secret(stateKeyB64)
	require.NoError(t, c.Validate())

	var out bytes.Buffer
	c.Logger(&out).Info("config", "config", c, "server", c.Server, "key", c.Server.StateKey)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("config", "config", c, "key", c.Server.StateKey)
	slog.New(slog.NewTextHandler(&out, nil)).Info("config", "config", c, "key", c.Server.StateKey)
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		fmt.Fprintf(&out, format+"\n", c)
		fmt.Fprintf(&out, format+"\n", c.Server.StateKey)
	}
	fmt.Fprintln(&out, c, c.Server.StateKey, c.Server.StateKey.String(), c.Server.StateKey.GoString())
	enc, err := json.Marshal(c)
	require.NoError(t, err)
	out.Write(enc)
	enc, err = stdjson.Marshal(c)
	require.NoError(t, err)
	out.Write(enc)

	assert.NotContains(t, out.String(), stateKeyB64)
	assert.NotContains(t, out.String(), string(stateKeyRaw))
	assert.NotContains(t, out.String(), stateKeyB64[:16])
	assert.Contains(t, out.String(), RedactedValue)

	var back Config
	require.NoError(t, stdjson.Unmarshal(enc, &back))
	assert.Equal(t, Secret(RedactedValue), back.Server.StateKey, "encoding shows the placeholder only")
	require.Error(t, back.Validate(), "and the placeholder is no key")

	var empty Secret
	assert.Equal(t, "", empty.String(), "an unset secret shows as empty")
	assert.Equal(t, "", fmt.Sprint(empty))
	assert.Equal(t, slog.StringValue(""), empty.LogValue())
}
