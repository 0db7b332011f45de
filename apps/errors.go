package apps

import "errors"

// Errors of the package, matchable with errors.Is.
var (
	// ErrInvalidDomain: a CSP origin is not of the form
	// scheme://host[:port].
	ErrInvalidDomain = errors.New("apps: invalid CSP domain")
	// ErrInvalidMeta: a tool's or a view's _meta.ui is malformed (a
	// resourceUri outside ui://, an unknown visibility, a value of the
	// wrong shape).
	ErrInvalidMeta = errors.New("apps: invalid _meta.ui")
	// ErrUnknownView: a tool links to a ui:// URI that no registered
	// resource has.
	ErrUnknownView = errors.New("apps: tool links to an unregistered view")
	// ErrNotAView: a tool links to a registered resource whose MIME type
	// is not MIMEType.
	ErrNotAView = errors.New("apps: linked resource is not an MCP App view")
	// ErrViewTooLarge: a view's HTML is over MaxViewBytes.
	ErrViewTooLarge = errors.New("apps: view too large")
)
