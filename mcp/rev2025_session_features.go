//go:build !keel_omit2025

package mcp

import (
	"sync"
	"sync/atomic"
)

// sessionFeatures is the state a 2025 session keeps for logging and for
// the requests the server sends its client: the level the client set
// with logging/setLevel, and the OnRootsListChanged callback's run.
type sessionFeatures struct {
	// logLevel is 1 + the severity of the level the client set with
	// logging/setLevel; 0 means ServerOptions.LogLevel.
	logLevel atomic.Int32

	// rootsMu guards rootsRunning and rootsPending: an OnRootsListChanged
	// callback is running, and another notification arrived meanwhile.
	rootsMu      sync.Mutex
	rootsRunning bool
	rootsPending bool
}

// sessionLogLevel returns the logging threshold of session ss: the level
// the client set with logging/setLevel or, before it did,
// ServerOptions.LogLevel; none ("") for a connection that serves
// 2026-07-28 requests only, which has no session level (what applies to
// one request is Request.LogLevel).
func sessionLogLevel(ss *Session) LoggingLevel {
	if ss.modernOnly {
		return ""
	}
	if p := ss.s25.Load(); p != nil {
		if v := p.feat.logLevel.Load(); v > 0 {
			return levelsBySeverity[v-1]
		}
	}
	return ss.server.opts.LogLevel
}

// sessionLogEnabled reports whether a message of level l reaches the
// client of session ss at its threshold.
func sessionLogEnabled(ss *Session, l LoggingLevel) bool {
	level := sessionLogLevel(ss)
	return ss.server.opts.Logging && level != "" && l.AtLeast(level)
}
