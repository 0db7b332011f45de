package mcp

import (
	"context"
	"errors"
	"io/fs"

	"github.com/go-json-experiment/json/jsontext"
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
	// -32603. p is the request's params as Params decoded them, shared
	// with any middleware that decoded them too: treat it as read-only.
	ReadResource(ctx context.Context, p *ReadResourceParams) (*ReadResourceResult, error)
}

// ResourceNotFoundError returns the JSON-RPC error for a resources/read of
// an unknown resource: code -32002 with data {"uri": uri}. The Server
// sends it as -32602 (same data) to 2026-07-28 requests, which must not
// use -32002; return it from either era. The answer's data also carries
// the request's correlationId, as every protocol error does.
func ResourceNotFoundError(uri string) *Error {
	return &Error{Code: CodeResourceNotFound, Message: "Resource not found", Data: resourceErrData{URI: uri}}
}

type resourceErrData struct {
	URI           string `json:"uri"`
	CorrelationID string `json:"correlationId,omitempty"`
}

func (d resourceErrData) correlatedWith(id func() string) any {
	if d.CorrelationID != "" {
		return nil
	}
	d.CorrelationID = id()
	return d
}

// declareFeatures adds the capabilities of resources, prompts and
// completion the server serves to caps (a revision that lacks one of them
// leaves it out: initializeResult).
func (s *Server) declareFeatures(caps *ServerCapabilities) {
	o := &s.opts
	if o.Resources != nil {
		caps.Resources = &ResourcesCapability{Subscribe: s.hub.updates, ListChanged: s.hub.watch&listResources != 0}
	}
	if o.Prompts != nil {
		caps.Prompts = &ListChangedCapability{ListChanged: s.hub.watch&listPrompts != 0}
	}
	if o.Completions != nil {
		caps.Completions = &struct{}{}
	}
}

// decodePaginated returns the params of a list request, as Params decoded
// them: shared, read-only.
func decodePaginated(req *Request) (*paginatedParams, *Error) {
	return paramsOf[paginatedParams](req)
}

func handleResourcesList(ctx context.Context, req *Request) (any, error) {
	p, perr := decodePaginated(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	list, err := ss.server.opts.Resources.ListResources(ctx)
	if err != nil {
		return nil, ss.featureError(err)
	}
	page, next, perr := paginate(list, func(x *Resource) string { return x.URI }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &ListResourcesResult{Resources: page, NextCursor: next}, nil
}

func handleResourceTemplatesList(ctx context.Context, req *Request) (any, error) {
	p, perr := decodePaginated(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	list, err := ss.server.opts.Resources.ListResourceTemplates(ctx)
	if err != nil {
		return nil, ss.featureError(err)
	}
	page, next, perr := paginate(list, func(x *ResourceTemplate) string { return x.URITemplate }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &ListResourceTemplatesResult{ResourceTemplates: page, NextCursor: next}, nil
}

// decodeURIParams returns the params of a request on one resource (a
// required absolute "uri"), as Params decoded them (a middleware's
// decoding, if one did): shared, read-only.
func decodeURIParams(req *Request) (*ReadResourceParams, *Error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + req.Method + " requires params {uri}"}
	}
	p, e := paramsOf[ReadResourceParams](req)
	if e != nil {
		return nil, e
	}
	if e := req.Session.server.opts.checkURI("uri", p.URI); e != nil {
		return nil, e
	}
	if err := CheckResourceURI(p.URI); err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	return p, nil
}

// resourceInput is the inputReader of resources/read: the resource's
// uri (its params have no arguments).
func resourceInput(_ context.Context, req *Request) (inputTarget, error) {
	p, e := decodeURIParams(req)
	if e != nil {
		return inputTarget{}, e
	}
	return inputTarget{name: p.URI, responses: p.InputResponses, state: p.RequestState}, nil
}

// handleResourcesRead serves resources/read, in the input rounds its row
// declares: its Input is its context's. resourceInput checked its params,
// decoded into the request's Params cache, where it reads them.
func handleResourcesRead(ctx context.Context, req *Request) (any, error) {
	p, e := paramsOf[ReadResourceParams](req)
	if e != nil {
		return nil, e
	}
	if p.InputResponses != nil || p.RequestState != "" {
		// The handler reads them with InputFromContext. The decoded
		// params are shared with middleware (read-only): a copy.
		c := *p
		c.InputResponses, c.RequestState = nil, ""
		p = &c
	}
	r := &req.r
	res, err := req.Session.server.opts.Resources.ReadResource(req.withProgress(ctx), p)
	return sourceAnswer(res, err, func(err error) *Error { return r.resourceError(err, p.URI) }, "resource")
}

// resourceError maps a read error to its JSON-RPC error: not found (a
// NOT_FOUND StructuredError or fs.ErrNotExist) is ResourceNotFoundError,
// the one not-found error of both revisions (the engine answers its code:
// errorCode).
func (r *responder) resourceError(err error, uri string) *Error {
	var se *StructuredError
	var rpc *Error
	switch {
	case errors.As(err, &rpc):
	case errors.As(err, &se) && se.Code == ErrNotFound, errors.Is(err, fs.ErrNotExist):
		return ResourceNotFoundError(uri)
	}
	return r.ss.featureError(err)
}

// featureError maps an error of a resource, prompt or completion source to
// a JSON-RPC error: an *Error as it is; a *StructuredError becomes -32602
// (INVALID_ARGUMENT, NOT_FOUND) or -32603 with the error in data; anything
// else -32603 with its text masked (protocolError). A StructuredError gets
// the connection's correlation id.
func (ss *Session) featureError(err error) *Error {
	var rpc *Error
	if errors.As(err, &rpc) {
		if se, ok := rpc.Data.(*StructuredError); ok && se.CorrelationID == "" {
			e := *rpc
			c := *se
			c.CorrelationID = ss.connID()
			e.Data = &c
			return &e
		}
		return rpc
	}
	var se *StructuredError
	if errors.As(err, &se) {
		c := *se
		if c.CorrelationID == "" {
			c.CorrelationID = ss.connID()
		}
		switch se.Code {
		case ErrInvalidArgument, ErrNotFound:
			return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + se.Message, Data: &c}
		}
		return &Error{Code: CodeInternalError, Message: "Internal error: " + se.Message, Data: &c}
	}
	return protocolError(ss, "request", err)
}
