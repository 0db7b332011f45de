package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// FanOut carries the changes a Server announces to its clients to the
// other processes that serve the same clients (replicas behind a load
// balancer), so that each delivers them to its own sessions and listen
// streams. Every change goes through it: NotifyAll, the tools, resources
// and prompts list changes, resource updates and the status of
// 2026-07-28 tasks. A Server delivers its own changes to its own clients
// itself; ServerOptions.FanOut nil (the default) means there are no other
// processes. Package postgres implements it with LISTEN/NOTIFY.
type FanOut interface {
	// Publish sends c to the other processes, never back to this one.
	Publish(ctx context.Context, c Change) error
	// Subscribe calls deliver with each change another process
	// published, one at a time and once each, until stop is called.
	Subscribe(deliver func(Change)) (stop func())
}

// The kinds of Change (Change.Kind): what a Server sets and reads; a
// FanOut carries them as they are.
const (
	changeToolsList       = "tools"     // notifications/tools/list_changed
	changeResourcesList   = "resources" // notifications/resources/list_changed
	changePromptsList     = "prompts"   // notifications/prompts/list_changed
	changeResourceUpdated = "updated"   // notifications/resources/updated (URI)
	changeTask            = "task"      // notifications/tasks (Task)
	changeNotification    = "notify"    // NotifyAll (Method, Params)
)

// Change is one change a Server announces to its clients.
type Change struct {
	// Kind says what the change is; a Server sets it (a FanOut carries it
	// as it is, and TaskChange makes the change of a task's status).
	Kind string `json:"kind"`
	// URI is the resource of a resource update.
	URI string `json:"uri,omitempty"`
	// Task is the new state of a task.
	Task *Task `json:"task,omitempty"`
	// Method and Params (a JSON object, or empty) are the notification
	// of a NotifyAll.
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// changeKinds maps the list kinds to their Change kinds.
var changeKinds = map[listKind]string{listTools: changeToolsList, listResources: changeResourcesList, listPrompts: changePromptsList}

// TaskChange is the Change that tells every process's listen streams of
// t's new status. A Server publishes it itself; a shared TaskStore that
// ends a task on its own (its runner's lease expired) publishes it too.
func TaskChange(t Task) Change { return Change{Kind: changeTask, Task: &t} }

// publishTimeout bounds one FanOut.Publish, and remoteNotifyTimeout the
// delivery of another process's NotifyAll to this one's sessions.
const publishTimeout = 5 * time.Second

var remoteNotifyTimeout = 5 * time.Second // a variable for tests

// publish sends c to the other processes, if there are any; a failure is
// logged (this process's clients have had the change already).
func (s *Server) publish(c Change) {
	if s.opts.FanOut == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := s.opts.FanOut.Publish(ctx, c); err != nil {
		s.log.Warn("mcp: a change did not reach the other processes", "kind", c.Kind, "error", err)
	}
}

// listChanged delivers a list change to this process's clients and
// publishes it.
func (s *Server) listChanged(k listKind) {
	s.hub.changed(k)
	s.publish(Change{Kind: changeKinds[k]})
}

// resourceUpdated delivers a resource update to this process's clients
// and publishes it.
func (s *Server) resourceUpdated(uri string) {
	s.hub.updated(uri)
	s.publish(Change{Kind: changeResourceUpdated, URI: uri})
}

// taskChanged delivers a 2026-07-28 task's new state to this process's
// listen streams and publishes it.
func (s *Server) taskChanged(t Task) {
	s.hub.taskChanged(t)
	s.publish(TaskChange(t))
}

// subscribeFanOut delivers the other processes' changes to this
// process's clients (called once, by NewServer). The subscription lasts
// as long as the fan-out does (closing it ends it).
func (s *Server) subscribeFanOut() {
	if s.opts.FanOut == nil {
		return
	}
	s.opts.FanOut.Subscribe(func(c Change) {
		switch c.Kind {
		case changeToolsList:
			s.hub.changed(listTools)
		case changeResourcesList:
			s.hub.changed(listResources)
		case changePromptsList:
			s.hub.changed(listPrompts)
		case changeResourceUpdated:
			s.hub.updated(c.URI)
		case changeTask:
			if c.Task != nil {
				s.hub.taskChanged(*c.Task)
			}
		case changeNotification:
			var params any
			if len(c.Params) > 0 {
				params = c.Params
			}
			// One goroutine delivers every change: a client that does not
			// read holds it for remoteNotifyTimeout at most.
			ctx, cancel := context.WithTimeout(context.Background(), remoteNotifyTimeout)
			err := s.notifyLocal(ctx, c.Method, params)
			cancel()
			if err != nil {
				s.log.Warn("mcp: a notification from another process did not reach every client", "method", c.Method, "error", err)
			}
		default:
			s.log.Warn("mcp: a change of an unknown kind from another process is ignored", "kind", c.Kind)
		}
	})
}
