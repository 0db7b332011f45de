package jsonrpc

import (
	"bytes"
	stdjson "encoding/json"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// appender is an io.Writer appending to a byte slice, so the codec encodes
// straight into the caller's (pooled) buffer. Appenders are pooled: an
// io.Writer handed to the codec escapes, and a fresh one per message would be
// an allocation.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }

var appenderPool = sync.Pool{New: func() any { return new(appender) }}

// appendValue appends v as compact JSON. A nil v is written as {}. Raw JSON
// (jsontext.Value or json.RawMessage) is appended as is when it is on one line; otherwise (or when
// empty) it is validated and compacted by the codec.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "{}"...), nil
	case jsontext.Value:
		if oneLine(x) {
			return append(dst, x...), nil
		}
	case stdjson.RawMessage:
		if oneLine(x) {
			return append(dst, x...), nil
		}
	}
	a := appenderPool.Get().(*appender)
	a.b = dst
	err := json.MarshalWrite(a, v, options)
	dst = a.b
	a.b = nil
	appenderPool.Put(a)
	return dst, err
}

// oneLine reports whether raw JSON is non-empty and on one line, so it can be
// appended to a message as is.
func oneLine(b []byte) bool {
	return len(b) > 0 && bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0
}

func appendID(dst []byte, id jsontext.Value) []byte {
	if id == nil {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

// AppendResponse appends a result response {"jsonrpc":"2.0","id":id,"result":result}.
// A nil result is written as {}.
func AppendResponse(dst []byte, id jsontext.Value, result any) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":`...)
	dst, err := appendValue(dst, result)
	if err != nil {
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

// AppendError appends an error response. A nil id is written as null; data
// is omitted when nil.
func AppendError(dst []byte, id jsontext.Value, code int64, message string, data any) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, code, 10)
	dst = append(dst, `,"message":`...)
	// Invalid UTF-8 in the message is replaced with U+FFFD rather than
	// losing the error response.
	dst, _ = jsontext.AppendQuote(dst, message)
	if data != nil {
		dst = append(dst, `,"data":`...)
		var err error
		if dst, err = appendValue(dst, data); err != nil {
			return dst[:start], err
		}
	}
	return append(dst, "}}"...), nil
}

// AppendRequest appends a request; params are omitted when nil.
func AppendRequest(dst []byte, id jsontext.Value, method string, params any) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	return appendMethod(dst, start, method, params)
}

// AppendNotification appends a notification; params are omitted when nil.
func AppendNotification(dst []byte, method string, params any) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	return appendMethod(dst, start, method, params)
}

func appendMethod(dst []byte, start int, method string, params any) ([]byte, error) {
	dst = append(dst, `,"method":`...)
	dst, err := jsontext.AppendQuote(dst, method)
	if err != nil {
		return dst[:start], err
	}
	if params != nil {
		dst = append(dst, `,"params":`...)
		if dst, err = appendValue(dst, params); err != nil {
			return dst[:start], err
		}
	}
	return append(dst, '}'), nil
}
