package taskstoretest_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/mcp/taskstoretest"
)

// A store's own test calls Run with a function that opens an empty store;
// here the suite runs against the in-memory store through
// testing.RunTests, as `go test` would run it from a Test function:
//
//	func TestMyStore(t *testing.T) {
//		taskstoretest.Run(t, func(t *testing.T) mcp.TaskStore { return openMyStore(t) })
//	}
func ExampleRun() {
	suite := func(t *testing.T) {
		taskstoretest.Run(t, func(*testing.T) mcp.TaskStore { return mcp.NewMemoryTaskStore(time.Now) })
	}
	all := func(string, string) (bool, error) { return true, nil }
	stdout := os.Stdout // RunTests reports each case there under -v
	os.Stdout, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	ok := testing.RunTests(all, []testing.InternalTest{{Name: "TestMemoryTaskStore", F: suite}})
	os.Stdout.Close()
	os.Stdout = stdout
	fmt.Println("conformance suite passed:", ok)
	// Output:
	// conformance suite passed: true
}
