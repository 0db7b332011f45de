package streamhttp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// appendSSEEvent appends one server-sent event: an optional id and retry
// field, then data (one "data:" line per line of data; an empty data line
// when data is empty), then the blank line that ends the event.
func appendSSEEvent(dst []byte, id string, retry time.Duration, data []byte) []byte {
	if id != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	if retry > 0 {
		dst = append(dst, "retry: "...)
		dst = strconv.AppendInt(dst, retry.Milliseconds(), 10)
		dst = append(dst, '\n')
	}
	if len(data) == 0 {
		dst = append(dst, "data: \n"...)
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

// sseEvent is one event read from an SSE stream.
type sseEvent struct {
	id    string
	hasID bool
	name  string
	data  []byte
	retry time.Duration
}

// sseReader reads events from an SSE stream (the subset of the
// EventSource rules MCP needs: data, id, event, retry, comments).
type sseReader struct {
	br  *bufio.Reader
	max int
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), max: max}
}

var errEventTooLarge = errors.New("transport: SSE event exceeds MaxMessageBytes")

// next returns the next event that has data or an id (events that only
// set retry are reported too, so that the caller learns the interval).
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []byte
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && (hasData || ev.hasID) {
				err = io.ErrUnexpectedEOF // an unterminated event is discarded
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if !hasData && !ev.hasID && ev.retry == 0 {
				continue
			}
			ev.data = data
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > r.max {
				return sseEvent{}, errEventTooLarge
			}
			data = append(data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.id, ev.hasID = string(value), true
			}
		case "event":
			ev.name = string(value)
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				ev.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// readLine returns one line without its ending ("\n" or "\r\n").
func (r *sseReader) readLine() ([]byte, error) {
	var long []byte
	for {
		frag, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, frag...)
			if len(long) > r.max+64 {
				return nil, errEventTooLarge
			}
			continue
		}
		if err != nil {
			if len(frag) > 0 || len(long) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if long != nil {
			frag = append(long, frag...)
		}
		frag = frag[:len(frag)-1]
		return bytes.TrimSuffix(frag, []byte{'\r'}), nil
	}
}
