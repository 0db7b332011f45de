package mcp_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelmcp/keel/mcp"
)

// A task record changes by compare and swap: a writer that read an older
// version is refused with ErrTaskConflict, reads again and retries. Other
// owners never see the record. A store is tested with
// taskstoretest.Run(t, newStore) in a test function.
func ExampleMemoryTaskStore() {
	ctx := context.Background()
	s := mcp.NewMemoryTaskStore(nil)
	lim := mcp.TaskLimits{MaxTasks: 10}
	rec := &mcp.TaskRecord{ID: "t1", Owner: "alice", Quota: "alice", Revision: mcp.Version20251125,
		State: mcp.Task{TaskID: "t1", Status: mcp.TaskStatusWorking}}
	fmt.Println(s.Create(ctx, rec, lim), rec.Version)

	a, _ := s.Get(ctx, "alice", "t1")
	b, _ := s.Get(ctx, "alice", "t1")
	a.State.Status = mcp.TaskStatusCompleted
	fmt.Println(s.Update(ctx, a, lim), a.Version)
	b.State.Status = mcp.TaskStatusCancelled
	fmt.Println(errors.Is(s.Update(ctx, b, lim), mcp.ErrTaskConflict))

	_, err := s.Get(ctx, "mallory", "t1")
	fmt.Println(errors.Is(err, mcp.ErrTaskNotFound))
	// Output:
	// <nil> 1
	// <nil> 2
	// true
	// true
}
