package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// MaxConns bounds the connections of the pool the stores share
	// (default DefaultMaxConns); the listener has one more of its own.
	MaxConns int32
	// Logger receives the listener's reconnections and dropped
	// notifications (nil: slog.Default()).
	Logger *slog.Logger
	// ReplicaID names this process among the replicas (default: a random
	// id); a task's lease and a notification's origin carry it. It may
	// not contain '|' nor be "sweeper" (the origin of the lease sweeper's
	// announcements).
	ReplicaID string
}

// DefaultMaxConns is the pool size of Open when Options.MaxConns is zero.
const DefaultMaxConns = 8

// DB is one replica's connection to the shared database: a pool for the
// stores and one connection that LISTENs for the notifications of the
// others. Close ends both.
type DB struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	id   string

	mu       sync.Mutex
	handlers map[string][]*handler // channel → subscribers
	closed   bool

	life context.Context // cancelled by Close
	stop context.CancelFunc
	done chan struct{} // closed when the listener has returned
}

// handler is one subscriber to a channel: its notifications are queued
// (bounded) and delivered by a goroutine of its own, one at a time.
type handler struct {
	fn     func(origin, payload string)
	resync func() // nil: none
	queue  chan notification
	done   chan struct{}
}

// notification is one notification of a channel, or (resync) the sign that
// notifications may have been missed.
type notification struct {
	origin, payload string
	resync          bool
}

// handlerQueue bounds the notifications queued for one subscriber; beyond
// it a notification is dropped with a warning naming the channel.
var handlerQueue = 4096 // a variable for tests

// Open connects to the database of dsn (a URL or key=value string, as pgx
// accepts), creates or migrates the schema (see the package comment) and
// starts listening for the other replicas' notifications.
func Open(ctx context.Context, dsn string, o *Options) (*DB, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.MaxConns <= 0 {
		opt.MaxConns = DefaultMaxConns
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.ReplicaID == "" {
		opt.ReplicaID = strings.ToLower(rand.Text())[:12]
	}
	if strings.ContainsRune(opt.ReplicaID, '|') {
		return nil, fmt.Errorf("postgres: Options.ReplicaID %q contains '|'", opt.ReplicaID)
	}
	if opt.ReplicaID == sweeperOrigin {
		return nil, fmt.Errorf("postgres: Options.ReplicaID %q is the origin of the lease sweeper's announcements", opt.ReplicaID)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DSN: %w", err)
	}
	cfg.MaxConns = opt.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	db := &DB{pool: pool, log: opt.Logger, id: opt.ReplicaID, handlers: map[string][]*handler{}, life: lctx, stop: stop, done: make(chan struct{})}
	ready := make(chan error, 1)
	go db.listen(lctx, cfg.ConnConfig, ready)
	select {
	case err := <-ready:
		if err != nil {
			db.Close()
			return nil, err
		}
	case <-ctx.Done():
		db.Close()
		return nil, ctx.Err()
	}
	return db, nil
}

// ReplicaID returns the id of this replica (Options.ReplicaID).
func (db *DB) ReplicaID() string { return db.id }

// Pool returns the connection pool the stores share.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close stops the listener and the subscribers' deliveries and closes the
// pool. Close the stores made from db first.
func (db *DB) Close() {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return
	}
	db.closed = true
	var hs []*handler
	for _, l := range db.handlers {
		hs = append(hs, l...)
	}
	db.handlers = map[string][]*handler{}
	db.mu.Unlock()
	db.stop()
	<-db.done
	for _, h := range hs {
		close(h.queue)
		<-h.done
	}
	db.pool.Close()
}

// channels are the LISTEN channels of the package, one per concern.
var channels = []string{chanTasks, chanFanOut}

const (
	chanTasks  = "keel_tasks"
	chanFanOut = "keel_fanout"
)

// subscribe calls fn (on a goroutine of its own, one call at a time) with
// the origin replica and payload of every notification on channel, until
// the returned function is called or db is closed. resync (nil: none),
// called on the same goroutine, is told when notifications may have been
// missed: after the LISTEN connection was made again, and whenever
// db.resync asks.
func (db *DB) subscribe(channel string, fn func(origin, payload string), resync func()) (unsubscribe func()) {
	h := &handler{fn: fn, resync: resync, queue: make(chan notification, handlerQueue), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for n := range h.queue {
			switch {
			case !n.resync:
				h.fn(n.origin, n.payload)
			case h.resync != nil:
				h.resync()
			}
		}
	}()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		close(h.queue)
		<-h.done
		return func() {}
	}
	db.handlers[channel] = append(db.handlers[channel], h)
	db.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			db.mu.Lock()
			l := db.handlers[channel]
			found := false
			for i, x := range l {
				if x == h {
					db.handlers[channel] = append(l[:i:i], l[i+1:]...)
					found = true
					break
				}
			}
			db.mu.Unlock()
			if found { // else Close closed it
				close(h.queue)
			}
			<-h.done
		})
	}
}

// notify sends payload on channel, as this replica, within q (a
// transaction, so that it is delivered only if that commits, or the pool).
func (db *DB) notify(ctx context.Context, q querier, channel, payload string) error {
	_, err := q.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, db.id+"|"+payload)
	return err
}

// querier is what pgx pools, connections and transactions share.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// resync tells the subscribers of channel (every channel when empty) that
// notifications may have been missed.
func (db *DB) resync(channel string) {
	if channel != "" {
		db.dispatch(channel, notification{resync: true})
		return
	}
	for _, ch := range channels {
		db.dispatch(ch, notification{resync: true})
	}
}

// dispatch queues n for the subscribers of channel.
func (db *DB) dispatch(channel string, n notification) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, h := range db.handlers[channel] {
		select {
		case h.queue <- n:
		default:
			db.log.Warn("postgres: a subscriber is too slow: notification dropped", "channel", channel, "queued", handlerQueue)
		}
	}
}

// listen holds the LISTEN connection, connecting again (after a pause that
// grows to 5s) when it is lost, until ctx ends. The first connection's
// outcome goes to ready.
func (db *DB) listen(ctx context.Context, cc *pgx.ConnConfig, ready chan<- error) {
	defer close(db.done)
	pause := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, cc, func() {
			if first {
				first = false
				ready <- nil
			} else {
				db.resync("") // what was sent while the connection was down
			}
			pause = 100 * time.Millisecond
		})
		if ctx.Err() != nil {
			break
		}
		if first {
			ready <- fmt.Errorf("postgres: listen: %w", err)
			return
		}
		db.log.Warn("postgres: the LISTEN connection was lost; the subscribers re-read their state once it is back", "error", err, "retryIn", pause)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
		pause = min(2*pause, 5*time.Second)
	}
	if first {
		ready <- ctx.Err()
	}
}

func (db *DB) listenOnce(ctx context.Context, cc *pgx.ConnConfig, up func()) error {
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	up()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		origin, payload, ok := strings.Cut(n.Payload, "|")
		if !ok {
			continue // not ours
		}
		db.dispatch(n.Channel, notification{origin: origin, payload: payload})
	}
}
