package storetest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/storetest"
)

// The record builders of the suite, usable in a store's own tests; the
// suite itself runs with storetest.Run(t, open) in a test function.
func ExampleRequest() {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	req := storetest.Request("a", "b", at)
	msg := storetest.Message(req, 1, at)
	s := aacp.NewMemoryStore()
	fmt.Println(s.Enqueue(context.Background(), req, msg, aacp.Fence{}))
	last, _ := s.GetLastSequence(context.Background(), "a", "b")
	fmt.Println(last, msg.Envelope.Validate())
	// Output:
	// <nil>
	// 1 <nil>
}
