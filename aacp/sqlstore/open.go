package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/maphash"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Option adjusts OpenSQLite or OpenPostgres.
type Option func(*config)

type config struct {
	synchronous string
	busyTimeout time.Duration
	readConns   int  // connections for reads outside the writers' transactions
	writers     int  // writer goroutines (one transaction at a time each)
	maxBatch    int  // writes committed in one transaction at most
	planner     bool // PostgreSQL transactions set postgresPlanner (WithPlannerSettings)
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
		writers: DefaultPostgresWriters, maxBatch: DefaultMaxBatch, planner: true}
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

// postgresPlanner names the planner settings the store turns off inside
// its PostgreSQL transactions. Every statement of the ledger reads or
// writes rows by key or by a range of an index, and its tables change
// faster than their statistics: a plan made while a table was small (a
// sequential scan, a hash join, a bitmap of a whole partial index) would
// stay cached while the table grows, and would read the index entries of
// every row changed since the last vacuum. Without those plans, the
// statements take their rows through the index that names them.
var postgresPlanner = []string{"enable_seqscan", "enable_bitmapscan", "enable_hashjoin", "enable_mergejoin"}

// WithPlannerSettings sets whether a Store on PostgreSQL turns off
// enable_seqscan, enable_bitmapscan, enable_hashjoin and enable_mergejoin
// inside its transactions (default true; see OpenPostgres). With false,
// every statement runs with the server's settings. SQLite ignores it.
func WithPlannerSettings(on bool) Option { return func(c *config) { c.planner = on } }

// OpenPostgres connects to the PostgreSQL database of dsn (a URL or
// key=value string, as pgx accepts) and migrates its schema. One pool
// serves the writers (WithWriters, each committing batches of writes in
// transactions of its own) and the reads (WithReadConns). WithSynchronous
// and WithBusyTimeout do not apply: durability is the server's
// (synchronous_commit, fsync).
//
// Every transaction begun on the store's pool (the store's own, and those
// begun on DB) starts with SET LOCAL enable_seqscan, enable_bitmapscan,
// enable_hashjoin and enable_mergejoin = off, sent with its BEGIN in one
// round trip, so that the ledger's statements take their rows through an
// index (its tables change faster than their statistics, and a plan made
// while a table was small would stay cached as it grows). SET LOCAL ends
// with the transaction: sessions keep the server's settings, no startup
// parameter is sent, and a pooler in transaction mode (PgBouncer) passes
// the settings to no other client. The reads the store runs outside a
// transaction use the session's settings, as prepared statements of
// their own (the server reuses a cached plan whatever the settings of the
// moment, so a transaction never runs a plan made outside one).
//
// The store sets only the settings whose value is the server's built-in
// default when it opens: one that dsn sets (as a parameter or with
// options=-c), or that the server's configuration, ALTER SYSTEM, ALTER
// DATABASE or ALTER ROLE sets, keeps its value. WithPlannerSettings(false)
// sets none of them.
func OpenPostgres(dsn string, opts ...Option) (*Store, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open postgres: %w", err)
	}
	pconn := &plannerConnector{Connector: stdlib.GetConnector(*pc)}
	db := sql.OpenDB(pconn)
	db.SetMaxOpenConns(c.writers + c.readConns)
	db.SetMaxIdleConns(c.writers + c.readConns)
	if c.planner {
		if err := pconn.setDefaults(db); err != nil {
			db.Close()
			return nil, err
		}
	}
	s, err := newStore(db, db, dialectPostgres, c)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// plannerConnector connects as pgx's database/sql driver does, and begins
// each transaction with the SET LOCAL statements of the planner settings
// that setDefaults chose.
type plannerConnector struct {
	driver.Connector
	sets atomic.Pointer[plannerSets]
}

// plannerSets are the statements that begin a transaction: set alone
// (SET LOCAL ...) and begin, BEGIN followed by set, sent as one query.
type plannerSets struct{ set, begin string }

// setDefaults reads which of the planner settings have the server's
// built-in default on one of the pool's sessions (pg_settings.source
// 'default', as opposed to a configuration file, the database, the role
// or the client's startup packet) and makes the store's transactions set
// those.
func (pc *plannerConnector) setDefaults(db *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT name FROM pg_settings WHERE source = 'default' AND name IN ('`+
		strings.Join(postgresPlanner, "', '")+`')`)
	if err != nil {
		return fmt.Errorf("sqlstore: connect: %w", err)
	}
	defer rows.Close()
	unset := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("sqlstore: connect: %w", err)
		}
		unset[name] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: connect: %w", err)
	}
	var set strings.Builder
	for _, name := range postgresPlanner {
		if unset[name] {
			fmt.Fprintf(&set, "SET LOCAL %s = off; ", name)
		}
	}
	if set.Len() > 0 {
		pc.sets.Store(&plannerSets{set: set.String(), begin: "BEGIN; " + set.String()})
	}
	return nil
}

// Connect returns a connection of pgx's driver whose transactions begin
// with the planner settings.
func (pc *plannerConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := pc.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if c, ok := dc.(*stdlib.Conn); ok {
		return &plannerConn{Conn: c, sets: &pc.sets}, nil
	}
	return dc, nil
}

// plannerConn is a connection of pgx's driver (all of whose methods it
// keeps) with BeginTx replaced.
type plannerConn struct {
	*stdlib.Conn
	sets *atomic.Pointer[plannerSets]
}

// Begin is BeginTx with default options (database/sql calls BeginTx).
func (c *plannerConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction and sets the planner settings in it: in
// the same query as BEGIN for a transaction with default options, after
// pgx's own BEGIN otherwise.
func (c *plannerConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	sets := c.sets.Load()
	if sets == nil || opts != (driver.TxOptions{}) {
		tx, err := c.Conn.BeginTx(ctx, opts)
		if err != nil || sets == nil {
			return tx, err
		}
		if _, err := c.Conn.Conn().Exec(ctx, sets.set); err != nil {
			tx.Rollback() //nolint:errcheck // the error of the SET matters
			return nil, err
		}
		return tx, nil
	}
	conn := c.Conn.Conn()
	if conn.IsClosed() {
		return nil, driver.ErrBadConn
	}
	if _, err := conn.Exec(ctx, sets.begin); err != nil {
		if conn.PgConn().TxStatus() != 'I' {
			(&plannerTx{ctx: ctx, conn: conn}).Rollback() //nolint:errcheck // the first error matters
		}
		return nil, err
	}
	return &plannerTx{ctx: ctx, conn: conn}, nil
}

// plannerTx ends a transaction that plannerConn.BeginTx began, as pgx's
// own transactions end.
type plannerTx struct {
	ctx  context.Context
	conn *pgx.Conn
}

// Commit commits; a transaction that failed and rolled back instead
// returns pgx.ErrTxCommitRollback.
func (t *plannerTx) Commit() error {
	tag, err := t.conn.Exec(t.ctx, "COMMIT")
	if err != nil {
		if t.conn.PgConn().TxStatus() != 'I' {
			t.conn.Close(t.ctx) //nolint:errcheck // the first error matters
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback rolls back; if it fails, the connection's state is unknown and
// it is closed.
func (t *plannerTx) Rollback() error {
	if _, err := t.conn.Exec(t.ctx, "ROLLBACK"); err != nil {
		t.conn.Close(t.ctx) //nolint:errcheck // the first error matters
		return err
	}
	return nil
}

// outsideTxTag ends the text of the reads the store runs outside its
// transactions on PostgreSQL. The server caches the plan of a prepared
// statement on each connection and reuses it whatever the settings of
// the moment, and the planner settings hold only inside the store's
// transactions: a text of their own keeps a plan made outside a
// transaction from serving one.
const outsideTxTag = " -- outside a transaction"

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
		if strings.HasPrefix(q, "SELECT") && (rdb != db || d == dialectPostgres) {
			rq := q
			if d == dialectPostgres {
				rq += outsideTxTag
			}
			if s.stmts[name], err = rdb.PrepareContext(ctx, rq); err != nil {
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

// DB returns the underlying database. On PostgreSQL, the transactions
// begun on it set the planner settings as the store's own do (see
// OpenPostgres).
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
