//go:build !keel_omit2025

package mcp

import (
	"context"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/revision"
)

func handleInitialized(_ context.Context, req *Request) (any, error) {
	ss := req.Session
	if !ss.state.CompareAndSwap(int32(stateInitializing), int32(stateRunning)) {
		ss.log.Warn("mcp: notifications/initialized out of order", "state", ss.currentState().String())
	}
	return nil, nil
}

func (s *Server) initializeResult(v string) *InitializeResult {
	o := &s.opts
	res := &InitializeResult{ProtocolVersion: v, Instructions: o.Instructions,
		ServerInfo: Implementation{Name: o.Name, Version: o.Version}}
	if revision.AtLeast(v, Version20250618) {
		res.ServerInfo.Title = o.Title
	}
	if revision.AtLeast(v, Version20251125) {
		res.ServerInfo.Description, res.ServerInfo.WebsiteURL, res.ServerInfo.Icons = o.Description, o.WebsiteURL, o.Icons
	}
	if o.Tools != nil {
		res.Capabilities.Tools = &ListChangedCapability{ListChanged: s.hub.watch&listTools != 0}
	}
	s.declareFeatures(&res.Capabilities) // resources, prompts, completions
	if !completionsIn(v) {
		res.Capabilities.Completions = nil
	}
	s.declareTasks(v, &res.Capabilities) // task_server.go
	if o.Logging {
		res.Capabilities.Logging = &struct{}{}
	}
	s.declareCustom(&res.Capabilities, false)
	return res
}

func handleSetLevel(_ context.Context, req *Request) (any, error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: logging/setLevel requires params {level}"}
	}
	var p setLevelParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams(err)
	}
	if !p.Level.Valid() {
		what := "unknown logging level " + quote(string(p.Level))
		if p.Level == "" {
			what = "level is required"
		}
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + what +
			" (want debug, info, notice, warning, error, critical, alert or emergency)"}
	}
	ss := req.Session
	state2025(ss).feat.logLevel.Store(int32(p.Level.severity()) + 1)
	ss.log.Debug("mcp: client set the logging level", "level", string(p.Level))
	return emptyResult{}, nil
}

func handleSubscribe(_ context.Context, req *Request) (any, error) {
	return subscribe(req, true)
}

func handleUnsubscribe(_ context.Context, req *Request) (any, error) {
	return subscribe(req, false)
}

func subscribe(req *Request, on bool) (any, error) {
	p, e := decodeURIParams(req) // same shape as subscribeParams and unsubscribeParams
	if e != nil {
		return nil, e
	}
	ss := req.Session
	if !on {
		ss.server.hub.unsubscribe(ss, p.URI)
	} else if e := ss.server.hub.subscribe(ss, p.URI); e != nil {
		return nil, e
	}
	return emptyResult{}, nil
}

// startStateless starts the session of a stateless HTTP request of 2025
// revision v already initialized: RUNNING at v (the newest negotiated
// revision when v is none of them), with no declared client capabilities.
func startStateless(ss *Session, v string) {
	if !revision.Negotiated(v) {
		v = latestVersion
	}
	ss.mu.Lock()
	state2025(ss).hs.version = v
	ss.mu.Unlock()
	ss.state.Store(int32(stateRunning))
}

// pingClient pings the client of session ss every d once it is
// initialized (ServerOptions.KeepAlive), until ctx ends; a client that
// does not answer in time ends the session with fail. The returned
// function waits for the pinger to end.
func pingClient(ss *Session, ctx context.Context, d time.Duration, fail context.CancelCauseFunc) (wait func()) {
	kaDone := make(chan struct{})
	go func() {
		defer close(kaDone)
		keepAlive(ctx, d, func() bool { return ss.currentState() == stateRunning }, ss.Ping, func(err error) {
			ss.log.Warn("mcp: closing the connection: the client does not answer pings", "keepAlive", d)
			fail(err)
		})
	}()
	return func() { <-kaDone }
}
