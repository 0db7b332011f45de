package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/logclip"
)

// instanceDecoder turns raw JSON into the generic form santhosh-tekuri's
// validator expects: map[string]any, []any, string, json.Number (numbers keep
// their exact text, so big integers are not rounded), bool and nil.
//
// It reads with jsontext, so it is as strict as the wire: duplicate member
// names and invalid UTF-8 are rejected. Decoders are pooled; a call allocates
// only the values it returns.
type instanceDecoder struct {
	buf bytes.Buffer
	dec *jsontext.Decoder
}

var instanceDecoders = sync.Pool{New: func() any {
	d := new(instanceDecoder)
	d.dec = jsontext.NewDecoder(&d.buf)
	return d
}}

// maxPooledBuffer bounds the buffer a pooled decoder keeps between calls.
const maxPooledBuffer = 64 << 10

var errTrailingData = errors.New("invalid data after top-level value")

// decodeInstance parses one JSON value from b.
func decodeInstance(b []byte) (any, error) {
	d := instanceDecoders.Get().(*instanceDecoder)
	d.buf.Reset()
	d.buf.Write(b)
	d.dec.Reset(&d.buf)
	v, err := d.value()
	if err == nil {
		if _, terr := d.dec.ReadToken(); terr != io.EOF {
			err = errTrailingData
		}
	}
	if d.buf.Cap() <= maxPooledBuffer {
		d.buf.Reset()
		instanceDecoders.Put(d)
	}
	return v, err
}

func (d *instanceDecoder) value() (any, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		return tok.String(), nil
	case '0':
		text := tok.String()
		if e := checkNumber(text); e != nil {
			e.Path = logclip.Clip(string(d.dec.StackPointer()), MaxNumberPathBytes)
			return nil, e
		}
		return json.Number(text), nil
	case '{':
		obj := make(map[string]any)
		for d.dec.PeekKind() != '}' {
			tok, err := d.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // before the next read voids tok
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, err
		}
		return obj, nil
	case '[':
		arr := make([]any, 0, 4)
		for d.dec.PeekKind() != ']' {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, err
		}
		return arr, nil
	default:
		return nil, errors.New("unexpected JSON token " + tok.Kind().String())
	}
}

// Bounds on the numbers of a JSON value checked against a schema. The
// validator computes with exact rationals: a number of a million digits
// costs seconds, and an exponent of a billion makes it fail. A number past
// a bound is refused before it, at a cost linear in the input.
const (
	// MaxNumberDigits bounds the digits of one number (its integer and
	// fraction parts together; far beyond what a float64, an int64 or a
	// 256-bit integer needs).
	MaxNumberDigits = 1000
	// MaxNumberExponent bounds the absolute value of a number's exponent
	// (the "e" part; float64 tops out at 308).
	MaxNumberExponent = 1000
	// MaxNumberPathBytes bounds NumberError.Path, made of keys the client
	// chose: a longer path is cut (followed by its length), so that the
	// error's message and details stay small.
	MaxNumberPathBytes = 256
)

// NumberError reports a number in a tool's arguments past MaxNumberDigits
// or MaxNumberExponent: the arguments are refused with INVALID_ARGUMENT
// before any schema check.
type NumberError struct {
	Path  string // JSON Pointer of the number in the arguments, cut to MaxNumberPathBytes
	Limit string // "maxNumberDigits" or "maxNumberExponent"
	Max   int    // the bound
}

// Error implements error.
func (e *NumberError) Error() string {
	path := e.Path
	if path == "" {
		path = "(root)"
	}
	if e.Limit == "maxNumberExponent" {
		return "number at " + path + " has an exponent beyond ±" + strconv.Itoa(e.Max) + " (" + e.Limit + ")"
	}
	return "number at " + path + " has more than " + strconv.Itoa(e.Max) + " digits (" + e.Limit + ")"
}

// checkNumber checks the text of a JSON number (valid JSON) against
// MaxNumberDigits and MaxNumberExponent, in one pass.
func checkNumber(text string) *NumberError {
	digits, i := 0, 0
	for ; i < len(text); i++ {
		c := text[i]
		if c == 'e' || c == 'E' {
			break
		}
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	if digits > MaxNumberDigits {
		return &NumberError{Limit: "maxNumberDigits", Max: MaxNumberDigits}
	}
	if i == len(text) {
		return nil
	}
	exp := text[i+1:]
	if exp != "" && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	if len(exp) > 4 || len(exp) == 4 && exp > strconv.Itoa(MaxNumberExponent) {
		return &NumberError{Limit: "maxNumberExponent", Max: MaxNumberExponent}
	}
	return nil
}
