package keel_test

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/keelmcp/keel"
)

func ExampleNewRedactingHandler() {
	h := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		// Drop the time so that the output is deterministic.
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	logger := slog.New(keel.NewRedactingHandler(h, nil)) // nil: the default denylist

	logger.Info("login\nINFO forged entry",
		"user", "ada",
		"Password", "hunter2",
		slog.Group("request", "Authorization", "Bearer abc", "path", "/mcp"),
		"args", map[string]any{"api_key": "k-123", "city": "Oslo"},
	)
	// Output:
	// {"level":"INFO","msg":"login\\u000aINFO forged entry","user":"ada","Password":"[REDACTED]","request":{"Authorization":"[REDACTED]","path":"/mcp"},"args":{"api_key":"[REDACTED]","city":"Oslo"}}
}

func ExampleRedact() {
	type Login struct {
		User     string `json:"user"`
		Password string `json:"password"`
	}
	in := map[string]any{"login": Login{User: "ada", Password: "hunter2"}, "SSN": "123-45-6789"}
	out := keel.Redact(in, []string{"password", "ssn"})
	fmt.Println(out)
	fmt.Println(in["login"].(Login).Password) // the input is never modified
	// Output:
	// map[SSN:[REDACTED] login:map[password:[REDACTED] user:ada]]
	// hunter2
}

func ExampleSanitize() {
	fmt.Println(keel.Sanitize("line one\nline two\tend"))
	// Output:
	// line one\u000aline two\u0009end
}

func ExampleLoadConfig() {
	// Tests inject the environment; a real server passes nil options.
	env := map[string]string{
		"KEEL_SERVER_NAME":              "weather",
		"KEEL_TOOLS_DEFAULT_TIMEOUT_MS": "5000",
		"KEEL_LOGGING_REDACT_KEYS":      "password,ssn",
	}
	cfg, err := keel.LoadConfig(&keel.LoadOptions{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Server.Name, cfg.Tools.DefaultTimeout(), cfg.Logging.Level, cfg.Mode, cfg.Logging.RedactKeys)

	// An invalid value fails fast, naming the field and the variable.
	env["KEEL_TOOLS_DEFAULT_TIMEOUT_MS"] = "-5"
	_, err = keel.LoadConfig(&keel.LoadOptions{Getenv: func(k string) string { return env[k] }})
	fmt.Println(err)
	// Output:
	// weather 5s info FULL [password ssn]
	// config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): must be > 0 (got -5)
}
