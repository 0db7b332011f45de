package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
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
		return json.Number(tok.String()), nil
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
