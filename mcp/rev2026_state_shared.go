package mcp

import (
	"context"
	"errors"
	"time"
)

// UsedStateStore remembers the requestStates used in single-use mode
// (ServerOptions.StateSingleUse) in a place replicas share, so that a
// state is accepted once in the whole deployment, not once per process.
// ServerOptions.UsedStates nil means the memory of this process. Package
// postgres implements it.
type UsedStateStore interface {
	// UseState records the state id as used until expiry. It returns
	// ErrStateUsed when id was recorded already, and ErrTooManyUsedStates
	// when max states (ServerOptions.MaxUsedStates) that have not expired
	// are recorded; then it records nothing. Any other error refuses the
	// state too (it is logged).
	UseState(ctx context.Context, id []byte, expiry time.Time, max int) error
}

// Errors of a UsedStateStore, matchable with errors.Is.
var (
	// ErrStateUsed: the requestState was used already.
	ErrStateUsed = errors.New("mcp: requestState used already")
	// ErrTooManyUsedStates: MaxUsedStates unexpired states are recorded.
	ErrTooManyUsedStates = errors.New("mcp: MaxUsedStates used requestStates are recorded")
)

// refusedUsedStore: the shared used-state store failed.
const refusedUsedStore stateRefusal = "used-state store failed"

// usedStateTimeout bounds one call of a UsedStateStore.
const usedStateTimeout = 5 * time.Second

// useShared records a verified state's id in the shared store; it returns
// why it is refused ("" when recorded).
func (s *Server) useShared(id []byte, expiry int64) stateRefusal {
	ctx, cancel := context.WithTimeout(context.Background(), usedStateTimeout)
	defer cancel()
	err := s.opts.UsedStates.UseState(ctx, id, time.Unix(expiry, 0), s.opts.MaxUsedStates)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrStateUsed):
		return refusedReplayed
	case errors.Is(err, ErrTooManyUsedStates):
		return refusedTooManyUsed
	}
	s.log.Error("mcp: the used-state store failed: the requestState is refused", "error", err)
	return refusedUsedStore
}
