package mcp

import "log/slog"

// LoggingLevel is the severity of a log message: the syslog severities of
// RFC 5424 §6.2.1.
type LoggingLevel string

// Logging levels, least severe first.
const (
	LoggingLevelDebug     LoggingLevel = "debug"
	LoggingLevelInfo      LoggingLevel = "info"
	LoggingLevelNotice    LoggingLevel = "notice"
	LoggingLevelWarning   LoggingLevel = "warning"
	LoggingLevelError     LoggingLevel = "error"
	LoggingLevelCritical  LoggingLevel = "critical"
	LoggingLevelAlert     LoggingLevel = "alert"
	LoggingLevelEmergency LoggingLevel = "emergency"
)

// Severity returns the RFC 5424 numerical code of the level: 0 for emergency
// (most severe) to 7 for debug, and -1 for a level MCP does not define.
func (l LoggingLevel) severity() int {
	switch l {
	case LoggingLevelEmergency:
		return 0
	case LoggingLevelAlert:
		return 1
	case LoggingLevelCritical:
		return 2
	case LoggingLevelError:
		return 3
	case LoggingLevelWarning:
		return 4
	case LoggingLevelNotice:
		return 5
	case LoggingLevelInfo:
		return 6
	case LoggingLevelDebug:
		return 7
	}
	return -1
}

// Valid reports whether l is one of the eight levels MCP defines.
func (l LoggingLevel) Valid() bool { return l.severity() >= 0 }

// AtLeast reports whether l is as severe as min or more, i.e. whether a
// message of level l passes a logging/setLevel threshold of min. It is false
// when either level is not valid.
func (l LoggingLevel) AtLeast(min LoggingLevel) bool {
	s, m := l.severity(), min.severity()
	return s >= 0 && m >= 0 && s <= m
}

// loggingLevelForSlog maps a slog level to the MCP level of the same
// severity: below Info is debug, Info to below Warn info, Warn to below
// Error warning, Error error; each further step of 4 above Error is one
// level more severe (critical, alert, emergency).
func loggingLevelForSlog(l slog.Level) LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return LoggingLevelDebug
	case l < slog.LevelWarn:
		return LoggingLevelInfo
	case l < slog.LevelError:
		return LoggingLevelWarning
	case l < slog.LevelError+4:
		return LoggingLevelError
	case l < slog.LevelError+8:
		return LoggingLevelCritical
	case l < slog.LevelError+12:
		return LoggingLevelAlert
	}
	return LoggingLevelEmergency
}

// SlogLevel returns the slog level of the same severity: the lowest level
// that maps back to l (below Info is debug, Info to below Warn info, Warn
// to below Error warning, Error error, and each further step of 4 one
// level more severe: critical, alert, emergency). Notice, which slog
// lacks, is Info+2 (which maps back to info); a level that is not valid
// is slog.LevelInfo.
func (l LoggingLevel) SlogLevel() slog.Level {
	switch l {
	case LoggingLevelDebug:
		return slog.LevelDebug
	case LoggingLevelNotice:
		return slog.LevelInfo + 2
	case LoggingLevelWarning:
		return slog.LevelWarn
	case LoggingLevelError:
		return slog.LevelError
	case LoggingLevelCritical:
		return slog.LevelError + 4
	case LoggingLevelAlert:
		return slog.LevelError + 8
	case LoggingLevelEmergency:
		return slog.LevelError + 12
	}
	return slog.LevelInfo
}

// setLevelParams are the params of logging/setLevel: the client asks for
// messages of Level and more severe.
type setLevelParams struct {
	Level LoggingLevel `json:"level"`
	Meta  Meta         `json:"_meta,omitempty"`
}

// LoggingMessageNotificationParams are the params of notifications/message.
// Data is any JSON value (a string, an object of details, ...) and is always
// written.
type LoggingMessageNotificationParams struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"` // name of the logger that issued the message
	Data   any          `json:"data"`
	Meta   Meta         `json:"_meta,omitempty"`
}
