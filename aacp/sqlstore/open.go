package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Option adjusts OpenSQLite or OpenPostgres.
type Option func(*config)

type config struct {
	synchronous string
	busyTimeout time.Duration
	readConns   int // connections for reads outside the writers' transactions
	writers     int // writer goroutines (one transaction at a time each)
	maxBatch    int // writes committed in one transaction at most
}

// Defaults of the options.
const (
	// DefaultMaxBatch is how many writes one transaction commits at most
	// (WithMaxBatch).
	DefaultMaxBatch = 512
	// DefaultPostgresWriters is how many transactions a Store on
	// PostgreSQL commits at a time (WithWriters); SQLite has one writer.
	// Two keep a commit's wait for its fsync overlapped with the next
	// batch's statements; more split the same writes into smaller
	// batches, whose fixed cost per transaction, and whose concurrent
	// locks on the same lease and sequence rows, cost the server more CPU
	// per message than they gain.
	DefaultPostgresWriters = 2
	// DefaultReadConns is how many connections serve reads beside the
	// writers' (WithReadConns).
	DefaultReadConns = 4
)

// WithSynchronous sets SQLite's synchronous pragma: "FULL" (the default:
// a commit survives a power loss) or "NORMAL" (faster in WAL mode; a
// commit survives a crash of the process but maybe not of the machine).
func WithSynchronous(mode string) Option { return func(c *config) { c.synchronous = mode } }

// WithBusyTimeout sets how long a SQLite connection waits for a lock held
// by another process (default 10s).
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = d } }

// WithReadConns sets how many connections serve the reads made outside
// the writers' transactions (default DefaultReadConns). On SQLite they
// are read-only connections beside the writer's, so that reads never wait
// for a commit; on PostgreSQL they are added to the writers' in one pool
// of WithWriters + WithReadConns connections, which writers and reads
// share (a burst of reads can make a writer wait for a connection).
func WithReadConns(n int) Option { return func(c *config) { c.readConns = n } }

// WithWriters sets how many writer goroutines commit transactions at a
// time on PostgreSQL (default DefaultPostgresWriters); each takes a
// connection from the pool it shares with the reads for each transaction.
// SQLite allows one writer: it ignores this.
func WithWriters(n int) Option { return func(c *config) { c.writers = n } }

// WithMaxBatch bounds how many writes one transaction commits (default
// DefaultMaxBatch).
func WithMaxBatch(n int) Option { return func(c *config) { c.maxBatch = n } }

func newConfig(opts []Option) (config, error) {
	c := config{synchronous: "FULL", busyTimeout: 10 * time.Second, readConns: DefaultReadConns,
		writers: DefaultPostgresWriters, maxBatch: DefaultMaxBatch}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.readConns < 1:
		return c, fmt.Errorf("sqlstore: WithReadConns(%d): at least 1", c.readConns)
	case c.writers < 1:
		return c, fmt.Errorf("sqlstore: WithWriters(%d): at least 1", c.writers)
	case c.maxBatch < 1:
		return c, fmt.Errorf("sqlstore: WithMaxBatch(%d): at least 1", c.maxBatch)
	}
	c.synchronous = strings.ToUpper(c.synchronous)
	switch c.synchronous {
	case "FULL", "NORMAL", "EXTRA":
	default:
		return c, fmt.Errorf("sqlstore: synchronous %q is not FULL, NORMAL or EXTRA", c.synchronous)
	}
	return c, nil
}

// walCheckpointPages is the size of SQLite's write-ahead log, in pages
// (32 MiB of 4 KiB pages), at which a commit copies the log back into the
// database file (wal_autocheckpoint; SQLite's default is 1000). A page
// changed by many batches in between is copied once: under load the
// ledger's writes touch the same pages again and again, so a larger log
// costs less work per message; the log stays bounded by about this size.
const walCheckpointPages = 8192

// OpenSQLite opens (creating it if needed) the SQLite ledger in the file
// at path and migrates its schema. Writes go through one connection (a
// SQLite database has one writer at a time), in WAL mode with the
// synchronous pragma of WithSynchronous (FULL by default); reads go
// through read-only connections of their own (WithReadConns), which WAL
// lets run while a transaction commits.
func OpenSQLite(path string, opts ...Option) (*Store, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c.writers = 1
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", c.busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+c.synchronous+")")
	// Statement and savepoint journals in memory, not in temporary files,
	// and a page cache (32 MiB) that holds the pages a batch changes; the
	// log is checkpointed every walCheckpointPages.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_pragma", "cache_size(-32768)")
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walCheckpointPages))
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and transactions of
	// this process then never wait for each other's locks.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	// The readers: read-only, and never the file's creators (the writer
	// connects and migrates first, in newStore).
	rq := url.Values{}
	rq.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", c.busyTimeout.Milliseconds()))
	rq.Add("_pragma", "query_only(1)")
	rdb, err := sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(c.readConns)
	rdb.SetMaxIdleConns(c.readConns)
	rdb.SetConnMaxLifetime(0)
	rdb.SetConnMaxIdleTime(0)
	s, err := newStore(db, rdb, dialectSQLite, c)
	if err != nil {
		rdb.Close()
		db.Close()
		return nil, err
	}
	return s, nil
}

// postgresPlanner are the planner settings of the store's PostgreSQL
// connections. Every statement of the ledger reads or writes rows by key
// or by a range of an index, and its tables change faster than their
// statistics: a plan made while a table was small (a sequential scan, a
// hash join, a bitmap of a whole partial index) would stay cached while
// the table grows, and would read the index entries of every row changed
// since the last vacuum. Without those plans, the statements take their
// rows through the index that names them. A DSN that sets one of these
// parameters keeps its value.
var postgresPlanner = map[string]string{
	"enable_seqscan":    "off",
	"enable_bitmapscan": "off",
	"enable_hashjoin":   "off",
	"enable_mergejoin":  "off",
}

// OpenPostgres connects to the PostgreSQL database of dsn (a URL or
// key=value string, as pgx accepts) and migrates its schema. One pool
// serves the writers (WithWriters, each committing batches of writes in
// transactions of its own) and the reads (WithReadConns). WithSynchronous
// and WithBusyTimeout do not apply: durability is the server's
// (synchronous_commit, fsync). The store's connections take every row
// through an index: they set enable_seqscan, enable_bitmapscan,
// enable_hashjoin and enable_mergejoin to off, unless dsn sets them (the
// ledger's tables change faster than their statistics, and a plan made
// while a table was small would stay cached as it grows).
func OpenPostgres(dsn string, opts ...Option) (*Store, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open postgres: %w", err)
	}
	for name, value := range postgresPlanner {
		if _, set := pc.RuntimeParams[name]; !set {
			pc.RuntimeParams[name] = value
		}
	}
	db := stdlib.OpenDB(*pc)
	db.SetMaxOpenConns(c.writers + c.readConns)
	db.SetMaxIdleConns(c.writers + c.readConns)
	s, err := newStore(db, db, dialectPostgres, c)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func newStore(db, rdb *sql.DB, d dialect, c config) (*Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Connecting runs the SQLite pragmas; switching a new file to WAL needs
	// an exclusive lock, which several processes opening it at once may
	// find taken without waiting for it: try again.
	for attempt := 0; ; attempt++ {
		err := db.PingContext(ctx)
		if err == nil {
			break
		}
		if !retryable(err) || attempt >= 200 {
			return nil, fmt.Errorf("sqlstore: connect: %w", err)
		}
		select {
		case <-time.After(time.Duration(1+attempt%10) * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("sqlstore: connect: %w", err)
		}
	}
	if err := migrate(ctx, db, d); err != nil {
		return nil, err
	}
	s := &Store{db: db, rdb: rdb, d: d, cfg: c, stmts: map[string]*sql.Stmt{}, txStmts: map[string]*sql.Stmt{},
		seed: maphash.MakeSeed(), stopped: make(chan struct{})}
	for name, q := range queries {
		q = d.rebind(strings.ReplaceAll(q, shareLock, d.lockClause()))
		stmt, err := db.PrepareContext(ctx, q)
		if err != nil {
			s.closeStmts()
			return nil, fmt.Errorf("sqlstore: prepare %s: %w", name, err)
		}
		s.txStmts[name], s.stmts[name] = stmt, stmt
		if rdb != db && strings.HasPrefix(q, "SELECT") {
			if s.stmts[name], err = rdb.PrepareContext(ctx, q); err != nil {
				s.stmts[name] = nil
				s.closeStmts()
				return nil, fmt.Errorf("sqlstore: prepare %s: %w", name, err)
			}
		}
	}
	if d == dialectSQLite {
		if err := s.prepareGrouped(ctx); err != nil {
			s.closeStmts()
			return nil, err
		}
	}
	for range c.writers {
		q := make(chan *writeOp, c.maxBatch)
		s.queues = append(s.queues, q)
		s.writersDone.Add(1)
		go s.writer(q)
	}
	return s, nil
}

// DB returns the underlying database.
func (s *Store) DB() *sql.DB { return s.db }

// Dialect returns "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.d.String() }

// Close stops the writers (writes still queued fail with ErrClosed) and
// closes the database.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stopped)
		s.writersDone.Wait()
		s.closeStmts()
		if s.rdb != s.db {
			err = s.rdb.Close()
		}
		if cerr := s.db.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

func (s *Store) closeStmts() {
	for name, st := range s.stmts {
		if st != nil && st != s.txStmts[name] {
			st.Close()
		}
	}
	for _, st := range s.txStmts {
		st.Close()
	}
	for _, st := range s.groupStmts {
		st.Close()
	}
}
