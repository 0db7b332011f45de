package middleware

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

// Defaults of ResponseLimitOptions (and StandardOptions).
const (
	// DefaultMaxResponseBytes is the default size limit of a tool result's
	// JSON encoding: mcp.DefaultMaxResultBytes (4 MiB - 64 KiB), so that a
	// result within it fits in one message of the transports' default
	// MaxMessageBytes. A result over the transport's limit is refused by
	// the Server even when MaxBytes is set higher (see
	// transport.MessageLimiter).
	DefaultMaxResponseBytes = mcp.DefaultMaxResultBytes
	// DefaultMaxArrayItems is the default limit on the items of any one
	// array in a tool result.
	DefaultMaxArrayItems = 1000
)

// ResponseLimitOptions configure ResponseLimit. Nil means all defaults.
type ResponseLimitOptions struct {
	// MaxBytes bounds the size of a result's JSON encoding: the result
	// object as the tools/call response carries it, without the JSON-RPC
	// envelope around it (0 = DefaultMaxResponseBytes; negative = no
	// limit).
	MaxBytes int
	// MaxArrayItems bounds the number of items of every array in a
	// result: the content blocks, and each array anywhere in
	// structuredContent (0 = DefaultMaxArrayItems; negative = no limit).
	MaxArrayItems int
}

// ResponseLimit returns a stage that checks the result the rest of the
// chain returns against two limits, and answers a tool error instead of a
// result that exceeds one; nothing is truncated. The result is measured
// once, as it would be encoded:
//
//   - more than MaxArrayItems content blocks, or an array in
//     structuredContent with more than MaxArrayItems items: a
//     RESOURCE_EXHAUSTED tool error with details {"limit":
//     "maxArrayItems", "maxArrayItems": n, "path": JSON Pointer of the
//     array in the result, such as "/content" or
//     "/structuredContent/rows"};
//   - an encoding larger than MaxBytes: RESOURCE_EXHAUSTED with details
//     {"limit": "maxResponseBytes", "maxResponseBytes": n}. Encoding stops
//     as soon as the limit is passed.
//
// Both errors are not retryable (the same call would produce the same
// result) and name the tool; the dropped result is logged (its size, not
// its content). The connection and the server carry on. A result that
// cannot be encoded at all is passed on unchanged, for the Server to
// report. Errors from the rest of the chain pass through unchecked.
func ResponseLimit(opts *ResponseLimitOptions) Middleware {
	var o ResponseLimitOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxResponseBytes
	}
	if o.MaxArrayItems == 0 {
		o.MaxArrayItems = DefaultMaxArrayItems
	}
	return func(next Handler) Handler {
		if o.MaxBytes < 0 && o.MaxArrayItems < 0 {
			return next
		}
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			res, err := next(ctx, c)
			if err != nil || res == nil {
				return res, err
			}
			if se := o.check(c, res); se != nil {
				c.Log().Warn("middleware: tool result over a response limit; an error is sent instead",
					"tool", c.Name, "limit", se.Details["limit"], "message", se.Message)
				return nil, se
			}
			return res, nil
		}
	}
}

// check returns the error for res if it exceeds a limit, else nil.
func (o ResponseLimitOptions) check(c *Call, res *mcp.CallToolResult) *mcp.StructuredError {
	if limit := o.MaxArrayItems; limit > 0 {
		path := ""
		if len(res.Content) > limit {
			path = "/content"
		} else if p, over := overlongArray(jsontext.Value(res.StructuredContent), limit); over {
			path = "/structuredContent" + string(p)
		}
		if path != "" {
			return limitError(c, "result of tool "+quote(c.Name)+" has an array of more than "+strconv.Itoa(limit)+" items at "+path+" (maxArrayItems)",
				map[string]any{"limit": "maxArrayItems", "maxArrayItems": limit, "path": path, "tool": c.Name})
		}
	}
	if limit := o.MaxBytes; limit > 0 && !fitsSurely(res, limit) {
		w := &countingWriter{max: limit}
		if err := json.MarshalWrite(w, res); errors.Is(err, errTooLarge) {
			return limitError(c, "result of tool "+quote(c.Name)+" is larger than maxResponseBytes ("+strconv.Itoa(limit)+" bytes)",
				map[string]any{"limit": "maxResponseBytes", "maxResponseBytes": limit, "tool": c.Name})
		}
	}
	return nil
}

// fitsSurely reports whether res's encoding is certainly no larger than
// limit, by a cheap upper bound (every string byte escaped to six, generous
// room for member names), so that small results need not be encoded to
// be measured. It answers false when it cannot tell (_meta, icons, ...).
func fitsSurely(res *mcp.CallToolResult, limit int) bool {
	const perValue = 256 // member names, punctuation, numbers of one block
	if res.Meta != nil {
		return false
	}
	n := perValue + 6*len(res.StructuredContent)
	for i := range res.Content {
		b := &res.Content[i]
		if b.Meta != nil || b.Icons != nil || b.Annotations != nil {
			return false
		}
		n += perValue + 6*(len(b.Type)+len(b.Text)+len(b.Data)+len(b.MimeType)+len(b.URI)+len(b.Name)+len(b.Title)+len(b.Description))
		if r := b.Resource; r != nil {
			if r.Meta != nil {
				return false
			}
			n += perValue + 6*(len(r.URI)+len(r.MimeType))
			if r.Text != nil {
				n += 6 * len(*r.Text)
			}
			if r.Blob != nil {
				n += 6 * len(*r.Blob)
			}
		}
		if n > limit {
			return false
		}
	}
	return n <= limit
}

func limitError(c *Call, msg string, details map[string]any) *mcp.StructuredError {
	se := c.toolError(mcp.ErrResourceExhausted, msg, details)
	se.Retryable = false // the same call would produce the same result
	return se
}

// overlongArray reports whether the JSON value v has an array of more than
// limit items, and if so the JSON Pointer of the first one found. A v
// that is not valid JSON reports none.
func overlongArray(v jsontext.Value, limit int) (jsontext.Pointer, bool) {
	if len(v) < 2*limit+3 { // "[" + limit+1 items of one byte and their commas + "]"
		return "", false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	for {
		if _, err := dec.ReadToken(); err != nil {
			return "", false // io.EOF: the whole value was read
		}
		// After each token, the innermost open container has grown by
		// the value just completed (or not, for a container just opened,
		// which has length 0): check it.
		if d := dec.StackDepth(); d > 0 {
			if kind, n := dec.StackIndex(d); kind == '[' && n > int64(limit) {
				return dec.StackPointer().Parent(), true
			}
		}
	}
}

// errTooLarge stops an encoding that passed the size limit.
var errTooLarge = errors.New("middleware: over the size limit")

// countingWriter counts bytes and fails once more than max were written.
type countingWriter struct {
	n, max int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n > w.max {
		return 0, errTooLarge
	}
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
