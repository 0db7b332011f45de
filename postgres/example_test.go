package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/postgres"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// Each replica opens the shared database (creating or migrating its
// schema) and plugs its stores into the server and the HTTP handler. It
// needs a database, so it is compiled, not run.
func Example_replica() {
	ctx := context.Background()
	db, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	tasks := postgres.NewTaskStore(db, nil)
	defer tasks.Close()
	srv := mcp.NewServer(&mcp.ServerOptions{
		Name: "replica", Version: "1",
		StateKey:       []byte(os.Getenv("STATE_KEY")), // the same on every replica
		Tasks:          &mcp.TaskOptions{Store: tasks},
		FanOut:         postgres.NewFanOut(db),
		StateSingleUse: true,
		UsedStates:     postgres.NewUsedStates(db, nil),
	})
	h := streamhttp.NewServerHandler(srv, &streamhttp.Options{EventStore: postgres.NewEventStore(db, nil)})
	_ = h // serve it at /mcp
}

// The schema version this build creates and migrates to.
func ExampleSchemaVersion() {
	fmt.Println(postgres.SchemaVersion())
	// Output: 1
}
