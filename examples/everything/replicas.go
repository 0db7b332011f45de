package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/postgres"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// replicas is what several everything processes behind a load balancer
// share through PostgreSQL (-postgres DSN): task records with runner
// leases, change notifications, SSE events and the single-use state
// memory. Every replica needs the same requestState key
// (KEEL_SERVER_STATE_KEY).
type replicas struct {
	db     *postgres.DB
	tasks  *postgres.TaskStore
	events *postgres.EventStore
}

// openReplicas connects to the database of dsn, creating or migrating
// its schema.
func openReplicas(ctx context.Context, dsn string, logger *slog.Logger, lease time.Duration) (*replicas, error) {
	db, err := postgres.Open(ctx, dsn, &postgres.Options{Logger: logger})
	if err != nil {
		return nil, err
	}
	logger.Info("everything: sharing tasks, notifications, events and used states through PostgreSQL",
		"replica", db.ReplicaID(), "schemaVersion", postgres.SchemaVersion(), "leaseTimeout", lease)
	return &replicas{db: db, tasks: postgres.NewTaskStore(db, &postgres.TaskStoreOptions{LeaseTimeout: lease}),
		events: postgres.NewEventStore(db, nil)}, nil
}

// apply makes so use the shared stores: the task store, the fan-out and
// the used-state memory, with single-use states.
func (r *replicas) apply(so *mcp.ServerOptions) error {
	if r == nil {
		return nil
	}
	if so.StateKey == nil && so.StateKeys == nil {
		return fmt.Errorf("-postgres: set the same requestState key on every replica (KEEL_SERVER_STATE_KEY)")
	}
	so.Tasks.Store = r.tasks
	so.FanOut = postgres.NewFanOut(r.db)
	so.StateSingleUse = true
	so.UsedStates = postgres.NewUsedStates(r.db, nil)
	return nil
}

// httpOptions adds the shared event store to the handler's options.
func (r *replicas) httpOptions(o *streamhttp.Options) {
	if r != nil {
		o.EventStore = r.events
	}
}

// Close stops the lease keeper and closes the database.
func (r *replicas) Close() {
	if r == nil {
		return
	}
	r.tasks.Close()
	r.db.Close()
}
