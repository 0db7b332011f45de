package main

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Guard gates.
const (
	gatePath   = "path_violation"
	gateRadius = "change_radius"
)

// policy is a governance policy: paths a change may touch (allowed, and not
// forbidden) and how many files it may touch at most. Globs are slash
// separated; "**" matches any number of path segments (zero included), other
// segments follow path.Match.
type policy struct {
	ID          string
	Description string
	Allowed     []string
	Forbidden   []string
	// RadiusLimit is the maximum number of changed paths (0 = no limit).
	RadiusLimit int
}

// policies are the built-in policies, by ID.
var policies = []policy{
	{
		ID: "default", Description: "Anything but secrets, VCS internals and generated vendor trees; at most 25 files",
		Allowed:     []string{"**"},
		Forbidden:   []string{"**/.env", "**/*.pem", "**/*.key", "secrets/**", ".git/**", "vendor/**"},
		RadiusLimit: 25,
	},
	{
		ID: "docs-only", Description: "Documentation changes only",
		Allowed:     []string{"docs/**", "**/*.md"},
		RadiusLimit: 50,
	},
	{
		ID: "src-only", Description: "Go sources and tests, no CI or module changes; at most 10 files",
		Allowed:     []string{"**/*.go", "testdata/**"},
		Forbidden:   []string{".ci/**", "go.mod", "go.sum"},
		RadiusLimit: 10,
	},
}

func init() {
	for _, p := range policies {
		for _, g := range slices.Concat(p.Allowed, p.Forbidden) {
			if err := checkGlob(g); err != nil {
				panic(fmt.Sprintf("policy %s: %v", p.ID, err))
			}
		}
	}
}

func lookupPolicy(id string) (*policy, error) {
	for i := range policies {
		if policies[i].ID == id {
			return &policies[i], nil
		}
	}
	return nil, mcp.NewToolError(mcp.ErrNotFound, fmt.Sprintf("policy %q not found", id),
		map[string]any{"reason": "POLICY_NOT_FOUND", "policyId": id})
}

// checkGlob reports a malformed glob.
func checkGlob(g string) error {
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("glob %q: %w", g, err)
		}
	}
	return nil
}

// matchGlob reports whether the slash-separated name matches glob, where a
// "**" segment matches zero or more segments.
func matchGlob(glob, name string) bool {
	return matchSegments(strings.Split(glob, "/"), strings.Split(name, "/"))
}

func matchSegments(g, n []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(n); i++ {
				if matchSegments(g[1:], n[i:]) {
					return true
				}
			}
			return false
		}
		if len(n) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], n[0]); !ok {
			return false
		}
		g, n = g[1:], n[1:]
	}
	return len(n) == 0
}

func matchAny(globs []string, name string) (string, bool) {
	for _, g := range globs {
		if matchGlob(g, name) {
			return g, true
		}
	}
	return "", false
}

// GuardCheckInput is guard_check's input.
type GuardCheckInput struct {
	PolicyID     string   `json:"policyId,omitempty" jsonschema:"description=The policy to evaluate (default: the policies applied to sessionId)"`
	ChangedPaths []string `json:"changedPaths" jsonschema:"description=Changed file paths relative to the workspace"`
	SessionID    string   `json:"sessionId,omitempty" jsonschema:"description=Session whose applied policies are evaluated when policyId is absent"`
}

// Violation is one reason a gate failed.
type Violation struct {
	Type    string `json:"type"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// GateResult is the outcome of one gate of one policy.
type GateResult struct {
	PolicyID   string      `json:"policyId"`
	Gate       string      `json:"gate"`
	Passed     bool        `json:"passed"`
	Violations []Violation `json:"violations"`
}

// GuardCheckOutput is guard_check's result.
type GuardCheckOutput struct {
	Passed      bool         `json:"passed"`
	PolicyIDs   []string     `json:"policyIds"`
	GateResults []GateResult `json:"gateResults"`
	Summary     string       `json:"summary"`
}

// GuardListInput is guard_list's input.
type GuardListInput struct {
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=20,description=Maximum number of policies (default 20)"`
}

// PolicyInfo describes a policy.
type PolicyInfo struct {
	PolicyID          string   `json:"policyId"`
	Description       string   `json:"description"`
	AllowedPaths      []string `json:"allowedPaths"`
	ForbiddenPaths    []string `json:"forbiddenPaths"`
	Gates             []string `json:"gates"`
	ChangeRadiusLimit int      `json:"changeRadiusLimit"`
}

// GuardListOutput is guard_list's result.
type GuardListOutput struct {
	Policies []PolicyInfo `json:"policies"`
	Total    int          `json:"total"`
}

// GuardApplyInput is guard_apply's input.
type GuardApplyInput struct {
	SessionID string `json:"sessionId" jsonschema:"minLength=1,description=Session to apply the policy to"`
	PolicyID  string `json:"policyId" jsonschema:"minLength=1,description=Policy to apply"`
}

// GuardApplyOutput is guard_apply's result.
type GuardApplyOutput struct {
	Applied   bool     `json:"applied"`
	SessionID string   `json:"sessionId"`
	PolicyID  string   `json:"policyId"`
	Policies  []string `json:"policies"`
	Message   string   `json:"message"`
}

func registerGuardTools(reg *registry.Registry, s *store) {
	const module = "guard"
	registry.MustRegister(reg, "guard_check", "Checks changed paths against a policy (or the policies applied to a session): allowed and forbidden path globs, change radius.",
		s.guardCheck, &registry.ToolOptions{Title: "Check guard policy", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "guard_list", "Lists the governance policies.",
		guardList, &registry.ToolOptions{Title: "List guard policies", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "guard_apply", "Applies a governance policy to an active session.",
		s.guardApply, &registry.ToolOptions{Title: "Apply guard policy", Module: module})
}

// evaluate runs the gates of p over paths.
func (p *policy) evaluate(paths []string) []GateResult {
	pathGate := GateResult{PolicyID: p.ID, Gate: gatePath, Violations: []Violation{}}
	for _, raw := range paths {
		name := path.Clean(strings.ReplaceAll(raw, "\\", "/"))
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			pathGate.Violations = append(pathGate.Violations, Violation{Type: "outside_workspace", Path: raw,
				Message: raw + " is outside the workspace"})
			continue
		}
		if g, bad := matchAny(p.Forbidden, name); bad {
			pathGate.Violations = append(pathGate.Violations, Violation{Type: "forbidden_path", Path: raw,
				Message: fmt.Sprintf("%s matches forbidden pattern %q", raw, g)})
			continue
		}
		if _, ok := matchAny(p.Allowed, name); !ok {
			pathGate.Violations = append(pathGate.Violations, Violation{Type: "not_allowed", Path: raw,
				Message: raw + " matches no allowed pattern"})
		}
	}
	pathGate.Passed = len(pathGate.Violations) == 0
	radius := GateResult{PolicyID: p.ID, Gate: gateRadius, Passed: true, Violations: []Violation{}}
	if p.RadiusLimit > 0 && len(paths) > p.RadiusLimit {
		radius.Passed = false
		radius.Violations = append(radius.Violations, Violation{Type: "change_radius",
			Message: fmt.Sprintf("%d paths changed; the limit is %d", len(paths), p.RadiusLimit)})
	}
	return []GateResult{pathGate, radius}
}

func (s *store) guardCheck(ctx context.Context, in GuardCheckInput) (GuardCheckOutput, error) {
	out := GuardCheckOutput{Passed: true, PolicyIDs: []string{}, GateResults: []GateResult{}}
	if in.SessionID != "" {
		if _, err := s.sessionState(ctx, in.SessionID); err != nil {
			return out, err
		}
	}
	switch {
	case in.PolicyID != "":
		out.PolicyIDs = append(out.PolicyIDs, in.PolicyID)
	case in.SessionID != "":
		ids, err := s.sessionPolicies(ctx, in.SessionID)
		if err != nil {
			return out, err
		}
		if len(ids) == 0 {
			ids = []string{"default"}
		}
		out.PolicyIDs = ids
	default:
		return out, mcp.NewToolError(mcp.ErrInvalidArgument, "give policyId or sessionId", map[string]any{"reason": "POLICY_REQUIRED"})
	}
	violations := 0
	for _, id := range out.PolicyIDs {
		p, err := lookupPolicy(id)
		if err != nil {
			return out, err
		}
		for _, r := range p.evaluate(in.ChangedPaths) {
			out.Passed = out.Passed && r.Passed
			violations += len(r.Violations)
			out.GateResults = append(out.GateResults, r)
		}
	}
	if out.Passed {
		out.Summary = fmt.Sprintf("%d paths pass %s", len(in.ChangedPaths), strings.Join(out.PolicyIDs, ", "))
	} else {
		out.Summary = fmt.Sprintf("%d violations of %s", violations, strings.Join(out.PolicyIDs, ", "))
	}
	return out, nil
}

func guardList(_ context.Context, in GuardListInput) (GuardListOutput, error) {
	out := GuardListOutput{Policies: []PolicyInfo{}, Total: len(policies)}
	for _, p := range policies[:min(len(policies), clampLimit(in.Limit, 20, 100))] {
		out.Policies = append(out.Policies, PolicyInfo{PolicyID: p.ID, Description: p.Description,
			AllowedPaths: slices.Clone(p.Allowed), ForbiddenPaths: append([]string{}, p.Forbidden...),
			Gates: []string{gatePath, gateRadius}, ChangeRadiusLimit: p.RadiusLimit})
	}
	return out, nil
}

func (s *store) guardApply(ctx context.Context, in GuardApplyInput) (GuardApplyOutput, error) {
	out := GuardApplyOutput{SessionID: in.SessionID, PolicyID: in.PolicyID}
	if _, err := lookupPolicy(in.PolicyID); err != nil {
		return out, err
	}
	if err := s.requireActive(ctx, in.SessionID); err != nil {
		return out, err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO agentops_session_policies (session_id, policy_id, applied_at)
		VALUES ($1, $2, $3) ON CONFLICT (session_id, policy_id) DO NOTHING`, in.SessionID, in.PolicyID, s.now())
	if err != nil {
		return out, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return out, err
	}
	out.Applied = n > 0
	if out.Applied {
		out.Message = "policy " + in.PolicyID + " applied to session " + in.SessionID
	} else {
		out.Message = "policy " + in.PolicyID + " was already applied to session " + in.SessionID
	}
	out.Policies, err = s.sessionPolicies(ctx, in.SessionID)
	return out, err
}
