package agents

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Envelope states, guarded by the agent's mutex.
const (
	statusQueued    = iota // in the queue
	statusStarted          // taken by the worker
	statusAbandoned        // removed by its caller, whose context ended
	statusRejected         // removed by Unregister or Shutdown
)

// envelope is one queued message and, once done is closed, its outcome.
type envelope struct {
	ctx    context.Context // the caller's
	msg    Message
	chain  *delegation
	status int

	queued, started, finished time.Time

	res  any
	err  error
	done chan struct{}
}

// finish records the outcome and wakes the caller.
func (e *envelope) finish(res any, err error) {
	e.res, e.err = res, err
	close(e.done)
}

// fifo is a queue of envelopes in a ring buffer.
type fifo struct {
	buf  []*envelope
	head int
	n    int
}

func (q *fifo) len() int { return q.n }

func (q *fifo) push(e *envelope) {
	if q.n == len(q.buf) {
		buf := make([]*envelope, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = e
	q.n++
}

func (q *fifo) pop() *envelope {
	if q.n == 0 {
		if len(q.buf) > 64 { // let a burst's buffer go
			q.buf, q.head = nil, 0
		}
		return nil
	}
	e := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return e
}

// remove takes e out of the queue, keeping the order of the others, and
// reports whether it was there.
func (q *fifo) remove(e *envelope) bool {
	for i := 0; i < q.n; i++ {
		if q.buf[(q.head+i)%len(q.buf)] != e {
			continue
		}
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)%len(q.buf)] = q.buf[(q.head+j+1)%len(q.buf)]
		}
		q.buf[(q.head+q.n-1)%len(q.buf)] = nil
		q.n--
		return true
	}
	return false
}

// drain empties the queue, marking its envelopes rejected, and returns them
// in order.
func (q *fifo) drain() []*envelope {
	out := make([]*envelope, 0, q.n)
	for e := q.pop(); e != nil; e = q.pop() {
		e.status = statusRejected
		out = append(out, e)
	}
	q.buf, q.head = nil, 0
	return out
}

// work is an agent's goroutine: it processes the queue until it is empty
// and no message came for the idle timeout, the agent was unregistered or
// the coordinator is shutting down. Send starts it; the Coordinator counts
// it until it ends.
func (c *Coordinator) work(a *agent) {
	var cur *envelope
	defer func() {
		if cur != nil {
			c.handlerExited(a, cur)
		}
		c.workerDone()
	}()
	var timer *time.Timer
	idle := false // the idle timeout passed with an empty queue
	for {
		a.mu.Lock()
		a.parked = false
		if c.reject.Load() && a.queue.len() > 0 {
			a.mu.Unlock()
			a.rejectQueued()
			continue
		}
		e := a.queue.pop()
		if e == nil {
			if idle || c.linger <= 0 || a.removed || c.closing.Load() {
				a.running = false
				a.mu.Unlock()
				if timer != nil {
					timer.Stop()
				}
				return
			}
			a.parked = true
			a.mu.Unlock()
			if timer == nil {
				timer = time.NewTimer(c.linger)
			} else {
				timer.Reset(c.linger)
			}
			select {
			case <-a.wake:
			case <-timer.C:
				idle = true
			case <-a.ctx.Done(): // unregistered
			case <-c.stopping:
			}
			continue
		}
		idle = false
		e.status = statusStarted
		a.busy = true
		h := a.handler
		a.mu.Unlock()
		cur = e
		c.process(a, h, e)
		cur = nil
	}
}

// handlerExited cleans up after a handler that ended the agent's goroutine
// with runtime.Goexit (t.FailNow in a test, for one): its caller gets an
// error and a new goroutine takes over the queue.
func (c *Coordinator) handlerExited(a *agent, e *envelope) {
	a.log.Error("agents: handler called runtime.Goexit", "message_type", e.msg.Type)
	a.mu.Lock()
	a.busy = false
	a.processed++
	a.failed++
	a.lastActivity = c.now()
	restart := a.queue.len() > 0
	if restart {
		c.active.Add(1) // before this goroutine's workerDone: never 0 in between
	} else {
		a.running = false
	}
	a.mu.Unlock()
	if restart {
		go c.work(a)
	}
	e.finish(nil, newError(a.id, ErrHandlerPanic, mcp.ErrInternal, ReasonHandlerPanic, nil,
		"the handler of agent %q exited its goroutine (runtime.Goexit) processing a %q message", a.id, e.msg.Type))
}

// process runs one message through the handler, commits the state changes
// and hands the outcome to the caller.
func (c *Coordinator) process(a *agent, h Handler, e *envelope) {
	depth := 1
	if e.chain != nil {
		depth = e.chain.depth + 1
	}
	ctx, cancel := context.WithCancel(context.WithValue(e.ctx, delegationKey{}, &delegation{agentID: a.id, parent: e.chain, depth: depth}))
	defer cancel() // also if the handler calls runtime.Goexit
	stop := context.AfterFunc(a.ctx, cancel)
	defer stop()
	st := newState(&a.state)
	ac := &AgentContext{AgentID: a.id, State: st, Logger: a.log, Coordinator: c}

	e.started = c.now()
	res, err := a.call(ctx, h, e.msg, ac)
	changes := st.close()
	e.finished = c.now()

	var newState map[string]any
	a.mu.Lock()
	if err == nil && len(changes) > 0 && !a.removed {
		changed, n, membersLen := a.state.measure(changes)
		if size := encodedSize(n, membersLen); size > c.maxState {
			res, err = nil, errStateTooLarge(a.id, size, c.maxState)
		} else if changed {
			a.state.commit(changes, membersLen)
			if c.onState != nil {
				newState = decodeState(a.state.members)
			}
		}
	}
	a.processed++
	if err != nil {
		a.failed++
	}
	a.busy = false
	a.lastActivity = e.finished
	a.mu.Unlock()

	if newState != nil {
		c.stateChanged(a, newState)
	}
	e.finish(res, err)
}

// call runs the handler, turning a panic into an ErrHandlerPanic error.
// recover is called only when the handler did not return normally: calling
// it on every message costs a stack copy.
func (a *agent) call(ctx context.Context, h Handler, msg Message, ac *AgentContext) (res any, err error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		p := recover()
		if p == nil { // runtime.Goexit: work's deferred cleanup takes over
			return
		}
		a.log.Error("agents: handler panicked", "message_type", msg.Type, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		res, err = nil, newError(a.id, ErrHandlerPanic, mcp.ErrInternal, ReasonHandlerPanic, nil,
			"the handler of agent %q panicked processing a %q message", a.id, msg.Type)
	}()
	res, err = h(ctx, msg, ac)
	returned = true
	return res, err
}

// stateChanged calls the OnStateChange hook, containing its panics.
func (c *Coordinator) stateChanged(a *agent, state map[string]any) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("agents: OnStateChange panicked", "panic", fmt.Sprint(p))
		}
	}()
	c.onState(a.id, state)
}
