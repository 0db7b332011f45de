package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Session statuses.
const (
	sessionActive    = "active"
	sessionCompleted = "completed"
)

// SessionCreateInput is session_create's input.
type SessionCreateInput struct {
	Initiator string         `json:"initiator" jsonschema:"minLength=1,description=The agent ID initiating the session"`
	Task      string         `json:"task" jsonschema:"minLength=1,description=Description of the session task"`
	Workspace string         `json:"workspace,omitempty" jsonschema:"description=Optional workspace path"`
	Metadata  jsontext.Value `json:"metadata,omitzero" jsonschema:"type=object,description=Optional metadata"`
}

// SessionCreateOutput is session_create's result.
type SessionCreateOutput struct {
	SessionID string `json:"sessionId"`
	Initiator string `json:"initiator"`
	Task      string `json:"task"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
	Workspace string `json:"workspace,omitempty"`
}

// SessionIDInput is session_status's input.
type SessionIDInput struct {
	SessionID string `json:"sessionId" jsonschema:"minLength=1,description=The session ID"`
}

// Participant is an agent that took part in a session.
type Participant struct {
	AgentID   string `json:"agentId"`
	Role      string `json:"role"`
	JoinedAt  string `json:"joinedAt"`
	TaskCount int    `json:"taskCount"`
}

// SessionStatusOutput is session_status's result.
type SessionStatusOutput struct {
	SessionID    string         `json:"sessionId"`
	Status       string         `json:"status"`
	Initiator    string         `json:"initiator"`
	Task         string         `json:"task"`
	Workspace    string         `json:"workspace,omitempty"`
	Metadata     jsontext.Value `json:"metadata,omitzero"`
	Participants []Participant  `json:"participants"`
	Policies     []string       `json:"policies"`
	Summary      string         `json:"summary,omitempty"`
	CreatedAt    string         `json:"createdAt"`
	UpdatedAt    string         `json:"updatedAt"`
	CompletedAt  string         `json:"completedAt,omitempty"`
}

// SessionCompleteInput is session_complete's input.
type SessionCompleteInput struct {
	SessionID string `json:"sessionId" jsonschema:"minLength=1,description=The session to complete"`
	Summary   string `json:"summary,omitempty" jsonschema:"description=Optional completion summary"`
}

// SessionCompleteOutput is session_complete's result.
type SessionCompleteOutput struct {
	SessionID   string `json:"sessionId"`
	Status      string `json:"status"`
	CompletedAt string `json:"completedAt"`
	Summary     string `json:"summary,omitempty"`
}

// SessionListInput is session_list's input.
type SessionListInput struct {
	Status    string `json:"status,omitempty" jsonschema:"enum=active,enum=completed,description=Only sessions with this status"`
	Initiator string `json:"initiator,omitempty" jsonschema:"description=Only sessions of this initiator"`
	Limit     int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=20,description=Maximum number of sessions (default 20)"`
}

// SessionSummary is one session in session_list's result.
type SessionSummary struct {
	SessionID        string `json:"sessionId"`
	Initiator        string `json:"initiator"`
	Task             string `json:"task"`
	Status           string `json:"status"`
	ParticipantCount int    `json:"participantCount"`
	CreatedAt        string `json:"createdAt"`
}

// SessionListOutput is session_list's result, most recent first.
type SessionListOutput struct {
	Sessions []SessionSummary `json:"sessions"`
	Total    int              `json:"total"`
}

func registerSessionTools(reg *registry.Registry, s *store) {
	const module = "session"
	registry.MustRegister(reg, "session_create", "Creates an active collaboration session started by an agent.",
		s.sessionCreate, &registry.ToolOptions{Title: "Create session", Module: module})
	registry.MustRegister(reg, "session_status", "Returns a session with its participants and guard policies.",
		s.sessionStatus, &registry.ToolOptions{Title: "Session status", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "session_complete", "Completes an active session.",
		s.sessionComplete, &registry.ToolOptions{Title: "Complete session", Module: module})
	registry.MustRegister(reg, "session_list", "Lists sessions, most recent first.",
		s.sessionList, &registry.ToolOptions{Title: "List sessions", ReadOnly: true, Module: module})
}

func sessionNotFound(id string) error {
	return mcp.NewToolError(mcp.ErrNotFound, fmt.Sprintf("session %q not found", id),
		map[string]any{"reason": "SESSION_NOT_FOUND", "sessionId": id})
}

func sessionNotActive(id, status string) error {
	return mcp.NewToolError(mcp.ErrInvalidArgument, fmt.Sprintf("session %q is %s, not active", id, status),
		map[string]any{"reason": "SESSION_ALREADY_COMPLETED", "sessionId": id, "status": status})
}

func (s *store) sessionCreate(ctx context.Context, in SessionCreateInput) (SessionCreateOutput, error) {
	id, now := uuid.NewString(), s.now()
	meta := "{}"
	if len(in.Metadata) > 0 {
		v := in.Metadata.Clone()
		if err := v.Compact(); err != nil {
			return SessionCreateOutput{}, mcp.NewToolError(mcp.ErrInvalidArgument, "metadata: "+err.Error(), nil)
		}
		meta = string(v)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO agentops_sessions
		(id, initiator, task, workspace, metadata, status, summary, created_at, updated_at, completed_at)
		VALUES ($1, $2, $3, $4, $5, $6, '', $7, $7, 0)`,
		id, in.Initiator, in.Task, in.Workspace, meta, sessionActive, now); err != nil {
		return SessionCreateOutput{}, err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO agentops_participants (session_id, agent_id, role, joined_at, task_count)
		VALUES ($1, $2, 'initiator', $3, 0)`, id, in.Initiator, now); err != nil {
		return SessionCreateOutput{}, err
	}
	return SessionCreateOutput{SessionID: id, Initiator: in.Initiator, Task: in.Task, Status: sessionActive,
		CreatedAt: ts(now), Workspace: in.Workspace}, nil
}

// sessionState returns a session's status, or SESSION_NOT_FOUND.
func (s *store) sessionState(ctx context.Context, id string) (string, error) {
	var status string
	err := s.db.QueryRowContext(ctx, `SELECT status FROM agentops_sessions WHERE id = $1`, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", sessionNotFound(id)
	}
	return status, err
}

// requireActive fails unless session id exists and is active.
func (s *store) requireActive(ctx context.Context, id string) error {
	status, err := s.sessionState(ctx, id)
	if err == nil && status != sessionActive {
		err = sessionNotActive(id, status)
	}
	return err
}

// participate records that agent ran a task in the active session id.
func (s *store) participate(ctx context.Context, id, agent string) error {
	if err := s.requireActive(ctx, id); err != nil {
		return err
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO agentops_participants (session_id, agent_id, role, joined_at, task_count)
		VALUES ($1, $2, 'participant', $3, 1)
		ON CONFLICT (session_id, agent_id) DO UPDATE SET task_count = agentops_participants.task_count + 1`, id, agent, now); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `UPDATE agentops_sessions SET updated_at = $1 WHERE id = $2`, now, id)
	return err
}

func (s *store) sessionStatus(ctx context.Context, in SessionIDInput) (SessionStatusOutput, error) {
	out := SessionStatusOutput{SessionID: in.SessionID, Participants: []Participant{}, Policies: []string{}}
	var (
		meta                string
		created, updated, c int64
	)
	err := s.db.QueryRowContext(ctx, `SELECT status, initiator, task, workspace, metadata, summary, created_at, updated_at, completed_at
		FROM agentops_sessions WHERE id = $1`, in.SessionID).
		Scan(&out.Status, &out.Initiator, &out.Task, &out.Workspace, &meta, &out.Summary, &created, &updated, &c)
	if errors.Is(err, sql.ErrNoRows) {
		return out, sessionNotFound(in.SessionID)
	}
	if err != nil {
		return out, err
	}
	out.CreatedAt, out.UpdatedAt, out.CompletedAt = ts(created), ts(updated), ts(c)
	if meta != "{}" {
		out.Metadata = jsontext.Value(meta)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT agent_id, role, joined_at, task_count FROM agentops_participants
		WHERE session_id = $1 ORDER BY joined_at, agent_id`, in.SessionID)
	if err != nil {
		return out, err
	}
	for rows.Next() {
		var (
			p  Participant
			at int64
		)
		if err := rows.Scan(&p.AgentID, &p.Role, &at, &p.TaskCount); err != nil {
			rows.Close()
			return out, err
		}
		p.JoinedAt = ts(at)
		out.Participants = append(out.Participants, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	out.Policies, err = s.sessionPolicies(ctx, in.SessionID)
	return out, err
}

// sessionPolicies returns the guard policies applied to a session, in the
// order they were applied.
func (s *store) sessionPolicies(ctx context.Context, id string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT policy_id FROM agentops_session_policies WHERE session_id = $1 ORDER BY applied_at`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (s *store) sessionComplete(ctx context.Context, in SessionCompleteInput) (SessionCompleteOutput, error) {
	now := s.now()
	res, err := s.db.ExecContext(ctx, `UPDATE agentops_sessions SET status = $1, summary = $2, updated_at = $3, completed_at = $3
		WHERE id = $4 AND status = $5`, sessionCompleted, in.Summary, now, in.SessionID, sessionActive)
	if err != nil {
		return SessionCompleteOutput{}, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = s.requireActive(ctx, in.SessionID) // not found, or already completed
		}
		return SessionCompleteOutput{}, err
	}
	return SessionCompleteOutput{SessionID: in.SessionID, Status: sessionCompleted, CompletedAt: ts(now), Summary: in.Summary}, nil
}

func (s *store) sessionList(ctx context.Context, in SessionListInput) (SessionListOutput, error) {
	out := SessionListOutput{Sessions: []SessionSummary{}}
	var a sqlArgs
	where := " WHERE 1 = 1"
	if in.Status != "" {
		where += " AND s.status = " + a.add(in.Status)
	}
	if in.Initiator != "" {
		where += " AND s.initiator = " + a.add(in.Initiator)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM agentops_sessions s`+where, a...).Scan(&out.Total); err != nil {
		return out, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT s.id, s.initiator, s.task, s.status, s.created_at,
		(SELECT COUNT(*) FROM agentops_participants p WHERE p.session_id = s.id)
		FROM agentops_sessions s`+where+` ORDER BY s.created_at DESC LIMIT `+a.add(clampLimit(in.Limit, 20, 1000)), a...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			x  SessionSummary
			at int64
		)
		if err := rows.Scan(&x.SessionID, &x.Initiator, &x.Task, &x.Status, &at, &x.ParticipantCount); err != nil {
			return out, err
		}
		x.CreatedAt = ts(at)
		out.Sessions = append(out.Sessions, x)
	}
	return out, rows.Err()
}
