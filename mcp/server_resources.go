package mcp

import (
	"context"
	"errors"
	"io/fs"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// ResourceSource is what a Server serves resources from (resources/list,
// resources/templates/list, resources/read). registry.Registry satisfies
// it. A source that also implements ResourceChangeNotifier gets
// notifications/resources/list_changed, one that implements
// ResourceUpdateNotifier gets subscriptions.
type ResourceSource interface {
	// ListResources returns every resource, sorted by URI (byte order).
	// The Server paginates the slice and never modifies it.
	ListResources(ctx context.Context) ([]*Resource, error)
	// ListResourceTemplates returns every resource template, sorted by
	// URITemplate (byte order). The Server paginates the slice and never
	// modifies it.
	ListResourceTemplates(ctx context.Context) ([]*ResourceTemplate, error)
	// ReadResource reads one resource. An unknown resource is an error
	// matching ResourceNotFoundError (or a NOT_FOUND *StructuredError, or
	// fs.ErrNotExist); an *Error is sent as it is; any other error becomes
	// -32603.
	ReadResource(ctx context.Context, p *ReadResourceParams) (*ReadResourceResult, error)
}

// ResourceNotFoundError returns the JSON-RPC error for a resources/read of
// an unknown resource: code -32002 with data {"uri": uri}.
func ResourceNotFoundError(uri string) *Error {
	return &Error{Code: CodeResourceNotFound, Message: "Resource not found", Data: resourceErrData{URI: uri}}
}

type resourceErrData struct {
	URI string `json:"uri"`
}

// declareFeatures adds the capabilities of resources, prompts and
// completion to an initialize result for revision v.
func (s *Server) declareFeatures(v string, caps *ServerCapabilities) {
	o := &s.opts
	if o.Resources != nil {
		caps.Resources = &ResourcesCapability{Subscribe: s.hub.updates, ListChanged: s.hub.watch&listResources != 0}
	}
	if o.Prompts != nil {
		caps.Prompts = &ListChangedCapability{ListChanged: s.hub.watch&listPrompts != 0}
	}
	if o.Completions != nil && VersionAtLeast(v, Version20250326) {
		caps.Completions = &struct{}{}
	}
}

// decodePaginated decodes the params of a list request; on failure it
// answers and returns false.
func decodePaginated(m *jsonrpc.Message, r responder) (PaginatedParams, bool) {
	var p PaginatedParams
	if m.Params != nil {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			r.error(invalidParams(err))
			return p, false
		}
	}
	return p, true
}

func (ss *Session) handleResourcesList(m *jsonrpc.Message, r responder) {
	p, ok := decodePaginated(m, r)
	if !ok {
		return
	}
	list, err := ss.server.opts.Resources.ListResources(r.context(ss.messageContext()))
	if err != nil {
		r.error(ss.featureError(err))
		return
	}
	page, next, perr := paginate(list, func(x *Resource) string { return x.URI }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		r.error(perr)
		return
	}
	r.result(&ListResourcesResult{Resources: downgradeResources(page, r.version()), NextCursor: next})
}

func (ss *Session) handleResourceTemplatesList(m *jsonrpc.Message, r responder) {
	p, ok := decodePaginated(m, r)
	if !ok {
		return
	}
	list, err := ss.server.opts.Resources.ListResourceTemplates(r.context(ss.messageContext()))
	if err != nil {
		r.error(ss.featureError(err))
		return
	}
	page, next, perr := paginate(list, func(x *ResourceTemplate) string { return x.URITemplate }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		r.error(perr)
		return
	}
	r.result(&ListResourceTemplatesResult{ResourceTemplates: downgradeTemplates(page, r.version()), NextCursor: next})
}

// decodeURIParams decodes params holding a required absolute "uri"; on
// failure it answers and returns false.
func decodeURIParams(m *jsonrpc.Message, r responder, p *ReadResourceParams) bool {
	if m.Params == nil || m.Params.Kind() != '{' {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: " + m.Method + " requires params {uri}"})
		return false
	}
	if err := json.Unmarshal(m.Params, p); err != nil {
		r.error(invalidParams(err))
		return false
	}
	if err := CheckResourceURI(p.URI); err != nil {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()})
		return false
	}
	return true
}

func (ss *Session) handleResourcesRead(m *jsonrpc.Message, r responder) func() {
	p := new(ReadResourceParams)
	if !decodeURIParams(m, r, p) {
		return nil
	}
	src, v := ss.server.opts.Resources, r.version()
	in, ok := r.inputFor(r.context(ss.messageContext()), MethodResourcesRead, p.URI, nil, p.InputResponses, p.RequestState)
	if !ok {
		return nil
	}
	p.InputResponses, p.RequestState = nil, ""
	return ss.featureJob(m, r, func(ctx context.Context) (any, error) {
		return r.withInput(ctx, in, func(ctx context.Context) (any, error) {
			res, err := src.ReadResource(ctx, p)
			var ir *InputRequiredError
			switch {
			case errors.As(err, &ir):
				return nil, ir
			case err != nil:
				return nil, ss.resourceError(err, p.URI, r.mod != nil)
			case res == nil:
				return nil, &Error{Code: CodeInternalError, Message: "Internal error: resource source returned no result"}
			}
			return downgradeReadResult(res, v), nil
		})
	})
}

// resourceError maps a read error to its JSON-RPC error: not found (a
// NOT_FOUND StructuredError or fs.ErrNotExist) is -32002 with the uri.
func (ss *Session) resourceError(err error, uri string, modern bool) *Error {
	var se *StructuredError
	var rpc *Error
	switch {
	case errors.As(err, &rpc):
		if modern && rpc.Code == CodeResourceNotFound {
			e := *rpc
			e.Code = CodeInvalidParams
			return &e
		}
		return ss.featureError(err)
	case errors.As(err, &se) && se.Code == ErrNotFound, errors.Is(err, fs.ErrNotExist):
		if modern { // 2026-07-28: -32602 (-32002 must not be used)
			return &Error{Code: CodeInvalidParams, Message: "Resource not found", Data: resourceErrData{URI: uri}}
		}
		return ResourceNotFoundError(uri)
	}
	return ss.featureError(err)
}

// featureError maps an error of a resource, prompt or completion source to
// a JSON-RPC error: an *Error as it is; a *StructuredError becomes -32602
// (INVALID_ARGUMENT, NOT_FOUND) or -32603 with the error in data; anything
// else -32603. A StructuredError gets the connection's correlation id.
func (ss *Session) featureError(err error) *Error {
	var rpc *Error
	if errors.As(err, &rpc) {
		if se, ok := rpc.Data.(*StructuredError); ok && se.CorrelationID == "" {
			e := *rpc
			c := *se
			c.CorrelationID = ss.connCorrelationID
			e.Data = &c
			return &e
		}
		return rpc
	}
	var se *StructuredError
	if errors.As(err, &se) {
		c := *se
		if c.CorrelationID == "" {
			c.CorrelationID = ss.connCorrelationID
		}
		switch se.Code {
		case ErrInvalidArgument, ErrNotFound:
			return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + se.Message, Data: &c}
		}
		return &Error{Code: CodeInternalError, Message: "Internal error: " + se.Message, Data: &c}
	}
	ss.log.Error("mcp: request failed", "error", err)
	return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
}

func (ss *Session) handleSubscribe(m *jsonrpc.Message, r responder, subscribe bool) {
	p := new(ReadResourceParams) // same shape as SubscribeParams and UnsubscribeParams
	if !decodeURIParams(m, r, p) {
		return
	}
	if !subscribe {
		ss.server.hub.unsubscribe(ss, p.URI)
	} else if !ss.server.hub.subscribe(ss, p.URI) {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: too many subscriptions on this connection"})
		return
	}
	r.result(EmptyResult{})
}
