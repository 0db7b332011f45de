package streamhttp

import (
	"net/http"

	"github.com/keelmcp/keel/internal/ids"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
)

// JSON-RPC error codes used in HTTP error bodies.
const (
	codeServerError     = -32000
	codeSessionNotFound = -32001
)

// exchange is one HTTP request on its way to an error the transport
// answers itself: what the error's correlation id is found from.
type exchange struct {
	h   *Handler  // nil outside a Handler (RequireBearer, CORS, the metadata endpoint)
	env *envelope // the POST's body as parsed; nil before (or without) it
	// rev2025 is what the 2025 rules read to find the session the request
	// names. It is empty in a build without those rules (keel_omit2025).
	rev2025 exchangeRev2025
}

// exchangeOf returns the exchange of r, served by h.
func (h *Handler) exchangeOf(r *http.Request) exchange {
	return exchange{h: h, rev2025: exchangeOfRequest(r)}
}

// with returns ex with the POST's parsed body.
func (ex exchange) with(env *envelope) exchange {
	ex.env = env
	return ex
}

// correlationID returns the correlation id of an error answering ex: the
// request's _meta.correlationId when its body was parsed and its one
// message carries one; else the correlation id of the session it names,
// when that session is known (even if it has ended since), belongs to
// the same user and its server told it (an mcp.Server does); else a fresh
// id for this exchange. It is computed only on the way to an error.
func (ex exchange) correlationID() string {
	if ex.env != nil && !ex.env.batch {
		if id := revision.CorrelationID(ex.env.x.Msg.Params); id != "" {
			return id
		}
	}
	if ex.h != nil {
		if id := ex.h.sessionCorrelationID(ex); id != "" {
			return id
		}
	}
	if ex.h != nil && ex.h.opts.newCorrelationID != nil {
		return ex.h.opts.newCorrelationID()
	}
	return ids.NewUUID()
}

// correlated is error data with a correlationId member of its own:
// withCorrelationID returns a copy carrying id.
type correlated interface {
	withCorrelationID(id string) any
}

// correlationData is error.data of the errors that carry no other data.
type correlationData struct {
	CorrelationID string `json:"correlationId"`
}

// versionData is the data of -32022 (unsupported protocol version).
type versionData mcp.UnsupportedVersionData

func (d versionData) withCorrelationID(id string) any {
	d.CorrelationID = id
	return d
}

// writeHTTPError answers ex with status and a JSON-RPC error (id null)
// whose data is {"correlationId": ...}; it returns the correlation id, for
// the log line of the refusal.
func writeHTTPError(w http.ResponseWriter, ex exchange, status int, code int64, msg string) string {
	return writeHTTPErrorID(w, ex, status, code, msg, nil, nil)
}

// writeHTTPErrorID answers ex with status and a JSON-RPC error echoing id
// (nil: null), whose data is data carrying the correlation id of ex
// (nil data: {"correlationId": ...} alone); it returns the correlation id.
// Every error body the transport writes itself goes through it.
func writeHTTPErrorID(w http.ResponseWriter, ex exchange, status int, code int64, msg string, id []byte, data correlated) string {
	cid := ex.correlationID()
	var d any = correlationData{CorrelationID: cid}
	if data != nil {
		d = data.withCorrelationID(cid)
	}
	body, err := jsonrpc.AppendError(nil, id, code, msg, d)
	if err != nil {
		body, _ = jsonrpc.AppendError(nil, id, code, msg, correlationData{CorrelationID: cid})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return cid
}
