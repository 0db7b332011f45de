package mcp_test

import (
	"testing"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/mcp/taskstoretest"
)

// The in-memory store passes the conformance suite of TaskStore.
func TestMemoryTaskStoreConformance(t *testing.T) {
	taskstoretest.Run(t, func(*testing.T) mcp.TaskStore { return mcp.NewMemoryTaskStore(nil) })
}
