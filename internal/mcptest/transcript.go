package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// A transcript is a txtar archive (see ParseTxtar). Its comment describes
// it. A file named "server" holds a JSON ServerConfig; every other file is
// one session, run against a fresh server as a subtest of that name. A
// session is a list of lines:
//
//	> {json}      a line the client sends, verbatim (it may be malformed)
//	>q "..."      a line the client sends, written as a Go quoted string
//	              (for control bytes, invalid UTF-8 and the like)
//	< {json}      a message the server must emit (a request of the server,
//	              such as sampling/createMessage, too: ids 1, 2, ... per
//	              session; the client's answer is a later "> " line)
//	# comment     ignored, like blank lines
//
// Each ">" line starts a step: the line, then the "<" lines it causes. The
// runner sends the line, reads as many messages as the step expects and
// matches them, in any order, after canonicalizing their JSON (decoded and
// re-encoded deterministically); the elements of batch responses, whose
// order JSON-RPC leaves open, are compared as a set. It then sends a barrier
// ping (id "barrier-N") and requires its answer to be the next message,
// which proves the step caused nothing more (a notification was not
// answered, a cancelled call stayed silent). At the end of a session the
// input ends (the server's Read reports io.EOF while its writes still reach
// the runner); the server must then emit nothing more and Run must return
// nil.
//
// Every message the server emits is checked with a Tracker against the
// schema of the revision negotiated in the session (LatestRevision until the
// initialize result).
//
// In update mode (TranscriptOptions.Update) each step's "<" lines are
// replaced by what the server emitted: the runner waits for as many messages
// as the step listed, then until the server has been quiet for 30ms.

// ServerConfig is the JSON of a transcript's "server" file: the knobs of the
// deterministic test server (see ServerOptions).
type ServerConfig struct {
	Name         string     `json:"name"`
	Version      string     `json:"version"`
	Title        string     `json:"title"`
	Description  string     `json:"description"`
	WebsiteURL   string     `json:"websiteUrl"`
	Instructions string     `json:"instructions"`
	Icons        []mcp.Icon `json:"icons"`
	// Tools names the fake tools served (absent: all; []: none).
	Tools []string `json:"tools"`
	// NoTools runs the server without a ToolSource (no tools capability).
	NoTools  bool `json:"noTools"`
	PageSize int  `json:"pageSize"`
	MaxDepth int  `json:"maxDepth"`
	MaxBatch int  `json:"maxBatch"`
	// MaxMessageBytes is the pipe's limit on one incoming message.
	MaxMessageBytes int `json:"maxMessageBytes"`
	// Logging, LogLevel, RequestTimeoutMs and ListRootsOnChange: see
	// ClientFeatureConfig (client_feature_tools.go).
	ClientFeatureConfig
	// Catalog serves resources, prompts and completions (catalog.go).
	Catalog *CatalogConfig `json:"catalog"`
	// Tasks offers tasks (task_tools.go).
	Tasks *TasksConfig `json:"tasks"`
}

// Options returns the deterministic ServerOptions the config describes.
func (c *ServerConfig) Options() *mcp.ServerOptions {
	var tools mcp.ToolSource
	switch {
	case c.NoTools:
	case c.Tools != nil && len(c.Tools) == 0:
		tools = &Tools{}
	default:
		tools = NewTools(c.Tools...)
	}
	o := ServerOptions(tools)
	if c.Name != "" {
		o.Name = c.Name
	}
	if c.Version != "" {
		o.Version = c.Version
	}
	o.Title, o.Description, o.WebsiteURL, o.Instructions, o.Icons = c.Title, c.Description, c.WebsiteURL, c.Instructions, c.Icons
	o.PageSize, o.MaxDepth, o.MaxBatch = c.PageSize, c.MaxDepth, c.MaxBatch
	c.ClientFeatureConfig.apply(o)
	c.Catalog.apply(o)
	c.Tasks.apply(o)
	return o
}

// TranscriptOptions configure the transcript runner (nil = defaults).
type TranscriptOptions struct {
	// Update rewrites each step's "<" lines with what the server emitted,
	// instead of comparing (wire it to a -update test flag).
	Update bool
	// Timeout bounds the wait for each expected message (default 5s).
	Timeout time.Duration
}

// RunTranscripts runs every transcript matching the glob pattern, each as
// a parallel subtest named after its file.
func RunTranscripts(t *testing.T, pattern string, opts *TranscriptOptions) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("mcptest: no transcripts match %s (%v)", pattern, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			t.Parallel()
			RunTranscriptFile(t, f, opts)
		})
	}
}

// RunTranscriptFile runs the sessions of one transcript file as subtests.
func RunTranscriptFile(t *testing.T, path string, opts *TranscriptOptions) {
	t.Helper()
	var o TranscriptOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := ParseTxtar(data)
	var cfg ServerConfig
	sessions := 0
	for _, f := range a.Files {
		if f.Name == "server" {
			if err := json.Unmarshal(f.Data, &cfg, json.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("%s: server config: %v", path, err)
			}
		} else {
			sessions++
		}
	}
	if sessions == 0 {
		t.Fatalf("%s: no sessions", path)
	}
	for i := range a.Files {
		f := &a.Files[i]
		if f.Name == "server" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			s := &session{t: t, cfg: &cfg, opts: &o, file: path + ":" + f.Name}
			if out := s.run(f.Data); o.Update && out != nil {
				f.Data = out
			}
		})
	}
	if o.Update {
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type lineKind int

const (
	lineOther lineKind = iota
	lineSend
	lineExpect
)

type scriptLine struct {
	kind    lineKind
	text    string // the line as written
	payload []byte
	no      int
}

type step struct {
	sends, expects []*scriptLine // one send
	actual         [][]byte      // update mode: what the server emitted
}

func parseScript(data []byte) ([]*scriptLine, []*step, error) {
	var lines []*scriptLine
	var steps []*step
	var cur *step
	for i, text := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		l := &scriptLine{text: text, no: i + 1}
		lines = append(lines, l)
		switch {
		case strings.HasPrefix(text, "> "):
			l.kind, l.payload = lineSend, []byte(text[2:])
		case strings.HasPrefix(text, ">q "):
			s, err := strconv.Unquote(strings.TrimSpace(text[3:]))
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: bad quoted line: %v", l.no, err)
			}
			l.kind, l.payload = lineSend, []byte(s)
		case strings.HasPrefix(text, "< "):
			l.kind, l.payload = lineExpect, []byte(text[2:])
		case strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#"):
			continue
		default:
			return nil, nil, fmt.Errorf("line %d: want \"> \", \">q \", \"< \" or \"#\": %q", l.no, text)
		}
		if l.kind == lineSend {
			cur = &step{}
			steps = append(steps, cur)
		}
		if cur == nil {
			return nil, nil, fmt.Errorf("line %d: an expected message before anything was sent", l.no)
		}
		if l.kind == lineSend {
			cur.sends = append(cur.sends, l)
		} else {
			cur.expects = append(cur.expects, l)
		}
	}
	return lines, steps, nil
}

// canonical returns the canonical form of a JSON message: decoded and
// re-encoded deterministically; the elements of a top-level array sorted.
func canonical(b []byte) (string, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", err
	}
	if arr, ok := v.([]any); ok {
		elems := make([]string, len(arr))
		for i, e := range arr {
			eb, err := json.Marshal(e, json.Deterministic(true))
			if err != nil {
				return "", err
			}
			elems[i] = string(eb)
		}
		slices.Sort(elems)
		return "[" + strings.Join(elems, ",") + "]", nil
	}
	out, err := json.Marshal(v, json.Deterministic(true))
	return string(out), err
}

// endableTransport is the server's end of the pipe: Read reports io.EOF once
// end is cancelled, while writes still reach the client, so that the runner
// can see anything the server emits after its input ended.
type endableTransport struct {
	transport.Transport
	end context.Context
}

func (e *endableTransport) Read(ctx context.Context) ([]byte, error) {
	if e.end.Err() != nil {
		return nil, io.EOF
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.end, cancel)
	defer stop()
	msg, err := e.Transport.Read(rctx)
	if err != nil && e.end.Err() != nil && ctx.Err() == nil {
		return nil, io.EOF
	}
	return msg, err
}

type session struct {
	t       testing.TB
	cfg     *ServerConfig
	opts    *TranscriptOptions
	file    string
	client  transport.Transport
	msgs    chan []byte
	tracker *Tracker
}

// next returns the next message the server emitted; nil after the
// connection ended or when none came within the timeout (Timeout, or idle
// when > 0; only the former is a failure).
func (s *session) next(idle time.Duration) []byte {
	return s.nextWithin(idle, idle == 0)
}

func (s *session) nextWithin(idle time.Duration, mustArrive bool) []byte {
	timeout := s.opts.Timeout
	if idle > 0 {
		timeout = idle
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case msg, ok := <-s.msgs:
		if !ok {
			return nil
		}
		if err := s.tracker.Received(msg); err != nil {
			s.t.Errorf("%s: server message %s\nviolates revision %s: %v", s.file, msg, s.tracker.Revision(), err)
		}
		return msg
	case <-timer.C:
		if mustArrive {
			s.t.Errorf("%s: no message from the server within %v", s.file, timeout)
		}
		return nil
	}
}

func (s *session) send(line []byte) {
	s.tracker.Sent(line)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	if err := s.client.Write(ctx, line); err != nil {
		s.t.Fatalf("%s: sending %s: %v", s.file, line, err)
	}
}

// run plays one session and, in update mode, returns its rewritten text.
func (s *session) run(data []byte) []byte {
	t := s.t
	lines, steps, err := parseScript(data)
	if err != nil {
		t.Fatalf("%s: %v", s.file, err)
	}
	var popts *transport.PipeOptions
	if s.cfg.MaxMessageBytes > 0 {
		popts = &transport.PipeOptions{MaxMessageBytes: s.cfg.MaxMessageBytes}
	}
	ct, st := transport.NewPipe(popts)
	end, endInput := context.WithCancel(context.Background())
	defer endInput()
	srv := mcp.NewServer(s.cfg.Options())
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), &endableTransport{Transport: st, end: end}) }()
	s.client, s.tracker, s.msgs = ct, NewTracker(), make(chan []byte, 64)
	defer func() {
		ct.Close()
		go func() {
			for range s.msgs { // unblock the reader after a failure
			}
		}()
	}()
	go func() {
		defer close(s.msgs)
		for {
			msg, err := ct.Read(context.Background())
			if err != nil {
				return
			}
			s.msgs <- bytes.Clone(msg)
		}
	}()

	for n, st := range steps {
		for _, l := range st.sends {
			s.send(l.payload)
		}
		if s.opts.Update {
			// Wait as long as for a real expectation for the messages
			// the step used to expect (tool calls answer asynchronously),
			// then for any more until the server is quiet.
			for range st.expects {
				msg := s.nextWithin(0, false)
				if msg == nil {
					break
				}
				st.actual = append(st.actual, msg)
			}
			for msg := s.next(30 * time.Millisecond); msg != nil; msg = s.next(30 * time.Millisecond) {
				st.actual = append(st.actual, msg)
			}
		} else {
			s.match(st)
		}
		s.barrier(n+1, st)
		if t.Failed() && !s.opts.Update {
			break
		}
	}

	endInput()
	for msg := s.next(0); msg != nil; msg = s.next(0) {
		t.Errorf("%s: server emitted %s after its input ended", s.file, msg)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: server Run returned %v, want nil", s.file, err)
		}
	case <-time.After(s.opts.Timeout):
		t.Errorf("%s: server Run did not return after the input ended", s.file)
	}
	if !s.opts.Update {
		return nil
	}
	return rewrite(lines, steps)
}

// match reads the messages a step expects and matches them in any order.
func (s *session) match(st *step) {
	t := s.t
	want := make([]string, len(st.expects))
	for i, l := range st.expects {
		c, err := canonical(l.payload)
		if err != nil {
			t.Fatalf("%s: line %d: expected message is not JSON: %v", s.file, l.no, err)
		}
		want[i] = c
	}
	matched := make([]bool, len(want))
	for range st.expects {
		msg := s.next(0)
		if msg == nil {
			var missing []string
			for i, l := range st.expects {
				if !matched[i] {
					missing = append(missing, fmt.Sprintf("  line %d: %s", l.no, l.payload))
				}
			}
			t.Errorf("%s: missing messages:\n%s", s.file, strings.Join(missing, "\n"))
			return
		}
		got, err := canonical(msg)
		if err != nil {
			t.Errorf("%s: server emitted invalid JSON %q: %v", s.file, msg, err)
			continue
		}
		i := -1
		for k := range want {
			if !matched[k] && want[k] == got {
				i = k
				break
			}
		}
		if i < 0 {
			var open []string
			for k, l := range st.expects {
				if !matched[k] {
					open = append(open, fmt.Sprintf("  want (line %d): %s", l.no, l.payload))
				}
			}
			t.Errorf("%s: unexpected message after line %d\n  got:  %s\n%s", s.file, st.sends[len(st.sends)-1].no, msg, strings.Join(open, "\n"))
			continue
		}
		matched[i] = true
	}
}

// barrier sends ping "barrier-n" and requires its answer to come next.
func (s *session) barrier(n int, st *step) {
	id := `"barrier-` + strconv.Itoa(n) + `"`
	s.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
	want, _ := canonical([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`))
	for {
		msg := s.next(0)
		if msg == nil {
			s.t.Errorf("%s: no answer to barrier ping %s", s.file, id)
			return
		}
		if got, _ := canonical(msg); got == want {
			return
		}
		if s.opts.Update {
			st.actual = append(st.actual, msg)
			continue
		}
		s.t.Errorf("%s: unexpected extra message after line %d (before the answer to barrier ping %s):\n  got: %s",
			s.file, st.sends[len(st.sends)-1].no, id, msg)
	}
}

// rewrite returns the session text with each step's "<" lines replaced by
// what the server emitted.
func rewrite(lines []*scriptLine, steps []*step) []byte {
	stepOf := map[*scriptLine]*step{}
	for _, st := range steps {
		for _, l := range st.sends {
			stepOf[l] = st
		}
		for _, l := range st.expects {
			stepOf[l] = st
		}
	}
	emitted := map[*step]bool{}
	var b bytes.Buffer
	emit := func(st *step) {
		if !emitted[st] {
			emitted[st] = true
			for _, m := range st.actual {
				b.WriteString("< " + string(m) + "\n")
			}
		}
	}
	for _, l := range lines {
		st := stepOf[l]
		switch l.kind {
		case lineExpect:
			emit(st)
			continue
		}
		b.WriteString(l.text + "\n")
		if l.kind == lineSend && st.sends[len(st.sends)-1] == l && len(st.expects) == 0 {
			emit(st)
		}
	}
	return b.Bytes()
}
