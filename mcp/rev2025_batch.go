//go:build !keel_omit2025

package mcp

import (
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// handleBatch handles a batch; the requests that run user code are run
// one after another by the returned job (the batch is answered as one
// array once all are done), on the reading goroutine as a single
// tools/call would be (see runInline).
func (rd *reader) handleBatch(msg []byte) job {
	ss := rd.ss
	r := responder{ss: ss, sc: sessionScope{ss}, wctx: rd.messageContext()} // a refusal of the whole batch has id null
	if derr := jsonrpc.CheckDepth(msg, ss.server.opts.MaxDepth); derr != nil {
		r.error(&Error{Code: derr.Code, Message: derr.Message})
		return nil
	}
	elems, derr := jsonrpc.SplitBatch(msg)
	if derr != nil {
		r.error(&Error{Code: derr.Code, Message: derr.Message})
		return nil
	}
	if v := ss.negotiated(); !revision.BatchAllowed(v) {
		if v == "" {
			v = "none (before initialize)"
		}
		r.error(&Error{Code: CodeInvalidRequest, Message: revision.BatchRefused + "; negotiated: " + v})
		return nil
	}
	if len(elems) > ss.server.opts.MaxBatch {
		r.error(&Error{Code: CodeInvalidRequest, Message: "Invalid Request: batch of " + strconv.Itoa(len(elems)) + " messages exceeds MaxBatch (" + strconv.Itoa(ss.server.opts.MaxBatch) + ")",
			Data: limitErrData{Limit: "MaxBatch", Max: ss.server.opts.MaxBatch, CorrelationID: ss.connID()}})
		return nil
	}
	msgs := make([]jsonrpc.Message, len(elems))
	errs := make([]*jsonrpc.DecodeError, len(elems))
	b := &batch{ss: ss}
	var jobs batchJobs
	for i, e := range elems {
		msgs[i], errs[i] = jsonrpc.Decode(e, ss.server.opts.MaxDepth)
		if errs[i] != nil || msgs[i].Kind == jsonrpc.KindRequest {
			b.want++
		}
	}
	for i := range elems {
		if errs[i] != nil {
			responder{ss: ss, sc: sessionScope{ss}, id: errs[i].ID, batch: b}.error(&Error{Code: errs[i].Code, Message: errs[i].Message})
			continue
		}
		if msgs[i].Kind == jsonrpc.KindRequest && msgs[i].Method == methodInitialize {
			if job := refuseGate(ss, &msgs[i], responder{ss: ss, sc: sessionScope{ss}, id: msgs[i].ID, batch: b}, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: initialize must not be part of a batch"}); job != nil {
				jobs = append(jobs, job)
			}
			continue
		}
		if job := rd.handleMessage(&msgs[i], b); job != nil {
			jobs = append(jobs, job)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return jobs
}

// batchJobs are the requests of a batch that run user code, run one after
// another.
type batchJobs []job

func (b batchJobs) run() {
	for _, j := range b {
		j.run()
	}
}

// limitErrData is error.data of a protocol error refusing a message at a
// bound: the option that sets it and its value.
type limitErrData struct {
	Limit         string `json:"limit"`
	Max           int    `json:"max"`
	CorrelationID string `json:"correlationId"`
}

// batch collects the responses to one batch and writes them as one array.
type batch struct {
	ss    *Session
	mu    sync.Mutex
	want  int
	parts [][]byte
	ids   []jsontext.Value // the id each part answers (nil: none)
}

// skip records that one expected response will never come (a cancelled request).
func (b *batch) skip() {
	b.mu.Lock()
	b.want--
	done := b.want > 0 && len(b.parts) == b.want
	b.mu.Unlock()
	if done {
		b.flush()
	}
}

func (b *batch) add(id jsontext.Value, part []byte) {
	b.mu.Lock()
	b.parts = append(b.parts, part)
	b.ids = append(b.ids, id)
	done := len(b.parts) == b.want
	b.mu.Unlock()
	if done {
		b.flush()
	}
}

func (b *batch) flush() {
	err := b.write(b.parts)
	if tl := tooLarge(err); tl != nil {
		// Together the answers pass the transport's limit: each request
		// is answered with the error naming it instead.
		b.ss.log.Warn("mcp: batch response over MaxMessageBytes; errors are sent instead", "bytes", tl.Size, "maxBytes", tl.Limit)
		parts := make([][]byte, len(b.ids))
		for i, id := range b.ids {
			if id == nil {
				id = jsonrpc.Null
			}
			e := responder{ss: b.ss, sc: sessionScope{b.ss}}.overLimit(tl)
			parts[i], _ = jsonrpc.AppendError(nil, id, e.Code, e.Message, e.Data)
		}
		err = b.write(parts)
	}
	if err != nil && !isClosed(err) {
		b.ss.log.Warn("mcp: writing batch response failed", "error", err)
	}
}

// write sends parts as one array.
func (b *batch) write(parts [][]byte) error {
	return b.ss.conn.send(b.ss.ctx, func(dst []byte) ([]byte, error) {
		dst = append(dst, '[')
		for i, p := range parts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, p...)
		}
		return append(dst, ']'), nil
	})
}

// addError adds the error response e (with id: r's, or null) to r's
// request.
func (b *batch) addError(r *responder, id jsontext.Value, e *Error) {
	part, err := jsonrpc.AppendError(nil, id, e.Code, e.Message, e.Data)
	if err != nil {
		part, _ = jsonrpc.AppendError(nil, id, e.Code, e.Message, nil)
	}
	b.add(r.id, part)
}
