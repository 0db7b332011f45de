//go:build !keel_omit2025

package mcp

// TaskOwnerCountsForTest returns what the server's tasks hold for the
// routing of status notifications: the live sessions registered, and the
// owners they are registered under.
func TaskOwnerCountsForTest(s *Server) (sessions, owners int) {
	st := s.tasks
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sess.of), len(st.sess.byOwner)
}

// The states of a 2025 session's handshake.
const (
	StateInitializing = stateInitializing
	StateRunning      = stateRunning
)

// StateForTest returns the session's state.
func (ss *Session) StateForTest() SessionState { return ss.currentState() }
