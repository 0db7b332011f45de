// Package postgres lets several keel replicas share what a single process
// keeps in memory, through one PostgreSQL database: the task records
// (TaskStore, an mcp.TaskStore with runner leases and cancel delivery),
// the change notifications every replica must deliver to its own streams
// (FanOut, over LISTEN/NOTIFY), the SSE events a 2025 stream resumes from
// (EventStore, a streamhttp.EventStore) and the memory of single-use
// request states (UsedStates).
//
// Quick start, in every replica (all of them with the same
// KEEL_SERVER_STATE_KEY):
//
//	db, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), nil)
//	if err != nil { ... }
//	defer db.Close()
//	tasks := postgres.NewTaskStore(db, nil)
//	defer tasks.Close()
//	srv := mcp.NewServer(impl, &mcp.ServerOptions{
//		Tasks:   &mcp.TaskOptions{Store: tasks},
//		FanOut:  postgres.NewFanOut(db),
//		...
//	})
//
// # Schema
//
// Open creates the tables it needs when they are missing and applies the
// migrations this build knows that the database has not seen yet, in one
// transaction under an advisory lock, so replicas that start together
// migrate once. The applied steps are recorded in keel_schema_migrations;
// a database migrated by a newer build (a step this one does not know) is
// refused with an error naming both versions. All tables are created in
// the schema first on the connection's search_path.
//
// # What is shared and what is not
//
// The records, their bounds (mcp.TaskLimits, counted in the database
// transaction that changes them), the events and the used states are
// global to the deployment. What runs a task (its handler, its context)
// stays in the replica that started it: a cancel requested through
// another replica reaches it through NOTIFY, and a replica that dies
// stops renewing the leases of its tasks, which another replica then
// marks failed.
package postgres
