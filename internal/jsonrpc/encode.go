package jsonrpc

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// appender is an io.Writer appending to a byte slice, so the codec encodes
// straight into the caller's (pooled) buffer.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }

func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "{}"...), nil
	case jsontext.Value:
		return append(dst, x...), nil
	}
	a := appender{dst}
	err := json.MarshalWrite(&a, v, json.Deterministic(true))
	return a.b, err
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
	dst, err := jsontext.AppendQuote(dst, message)
	if err != nil {
		return dst[:start], err
	}
	if data != nil {
		dst = append(dst, `,"data":`...)
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
