package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/jackc/pgx/v5"

	"github.com/keelmcp/keel/mcp"
)

// TaskStoreOptions configure NewTaskStore. A nil *TaskStoreOptions means
// all defaults.
type TaskStoreOptions struct {
	// LeaseTimeout is how long a task whose replica stopped renewing its
	// lease stays "working" (or input_required) before another replica
	// marks it failed (default DefaultLeaseTimeout). A replica renews the
	// leases of its tasks every LeaseTimeout/3 and sweeps the others'
	// expired ones as often.
	LeaseTimeout time.Duration
	// Now is the store's clock (nil: time.Now); it decides expiry and
	// leases. Replicas' clocks should agree within a fraction of
	// LeaseTimeout.
	Now func() time.Time
	// Limits are the bounds the lease sweeper counts when it fails a task
	// (give the Server's mcp.TaskOptions limits); once a call passes
	// bounds, the last call's are used. Zero: none until then.
	Limits mcp.TaskLimits
}

// DefaultLeaseTimeout is TaskStoreOptions.LeaseTimeout when zero.
const DefaultLeaseTimeout = 15 * time.Second

// TaskStore is an mcp.TaskStore in PostgreSQL, shared by replicas: every
// record, version and bound lives in the database, and each change is one
// transaction. Updates are compare and swap on the record's version
// (the row is locked while it is compared); the bounds of mcp.TaskLimits
// are counted inside the transaction that would exceed them, under an
// advisory lock per quota key (and one for the bounds in all), so that
// concurrent replicas never overshoot them.
//
// Beyond mcp.TaskStore it keeps a lease per task not terminal: the
// replica that created the task renews it while it runs, and when it
// stops (the process died) another replica marks the task failed once
// TaskStoreOptions.LeaseTimeout has passed. It implements
// mcp.TaskChangeSource, so a Server using it learns of changes made
// through other replicas (a cancel, answers to input_required) and acts
// on the runs of its own process.
type TaskStore struct {
	db    *DB
	now   func() time.Time
	lease time.Duration
	log   *slog.Logger
	lim   atomic.Pointer[mcp.TaskLimits] // the bounds of the last call (first TaskStoreOptions.Limits), for the sweeper

	stop context.CancelFunc
	done chan struct{}
	once sync.Once

	runsMu sync.Mutex
	runs   map[string]bool // the non-terminal records this instance created: the only leases it renews
}

// setRun adds id to (on) or removes it from the records this instance runs.
func (s *TaskStore) setRun(id string, on bool) {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	if on {
		s.runs[id] = true
	} else {
		delete(s.runs, id)
	}
}

// runIDs returns the ids of the records this instance runs.
func (s *TaskStore) runIDs() []string {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	ids := make([]string, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	return ids
}

var (
	_ mcp.TaskStore        = (*TaskStore)(nil)
	_ mcp.TaskChangeSource = (*TaskStore)(nil)
)

// NewTaskStore returns the task store of db and starts its lease keeper
// (renewal of this replica's leases, sweep of the others' expired ones),
// which Close stops.
func NewTaskStore(db *DB, o *TaskStoreOptions) *TaskStore {
	var opt TaskStoreOptions
	if o != nil {
		opt = *o
	}
	if opt.LeaseTimeout <= 0 {
		opt.LeaseTimeout = DefaultLeaseTimeout
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &TaskStore{db: db, now: opt.Now, lease: opt.LeaseTimeout, log: db.log, stop: stop, done: make(chan struct{}), runs: map[string]bool{}}
	s.lim.Store(&opt.Limits)
	go s.keepLeases(ctx)
	return s
}

// Close stops the lease keeper. The tasks of this replica that are not
// terminal are then failed by another replica after the lease timeout.
func (s *TaskStore) Close() error {
	s.once.Do(func() {
		s.stop()
		<-s.done
	})
	return nil
}

// taskBody is the JSON of a record's data (the columns hold its keys).
type taskBody struct {
	State  mcp.Task            `json:"state"`
	Result *mcp.CallToolResult `json:"result,omitempty"`
	Error  *mcp.Error          `json:"error,omitempty"`
	Input  *mcp.TaskInput      `json:"input,omitempty"`
}

func encodeBody(rec *mcp.TaskRecord) ([]byte, error) {
	b, err := json.Marshal(taskBody{State: rec.State, Result: rec.Result, Error: rec.Error, Input: rec.Input})
	if err != nil {
		return nil, fmt.Errorf("postgres: encode task %q: %w", rec.ID, err)
	}
	return b, nil
}

// nanos is t as Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

const taskColumns = `id, owner, quota, revision, seq, version, expires_at, size, body`

func scanTask(row pgx.Row) (*mcp.TaskRecord, error) {
	var rec mcp.TaskRecord
	var seq, version, exp int64
	var body []byte
	if err := row.Scan(&rec.ID, &rec.Owner, &rec.Quota, &rec.Revision, &seq, &version, &exp, &rec.Size, &body); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, mcp.ErrTaskNotFound
		}
		return nil, err
	}
	var b taskBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("postgres: decode task %q: %w", rec.ID, err)
	}
	rec.Seq, rec.Version = uint64(seq), uint64(version)
	if exp != 0 {
		rec.ExpiresAt = time.Unix(0, exp)
	}
	rec.State, rec.Result, rec.Error, rec.Input = b.State, b.Result, b.Error, b.Input
	return &rec, nil
}

// live is the condition of a record that has not expired at $now.
const live = `(expires_at = 0 OR expires_at > @now)`

// Get implements mcp.TaskStore.
func (s *TaskStore) Get(ctx context.Context, owner, id string) (*mcp.TaskRecord, error) {
	return scanTask(s.db.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM keel_tasks WHERE id = @id AND owner = @owner AND `+live,
		pgx.NamedArgs{"id": id, "owner": owner, "now": s.now().UnixNano()}))
}

// List implements mcp.TaskStore.
func (s *TaskStore) List(ctx context.Context, owner string) ([]*mcp.TaskRecord, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT `+taskColumns+` FROM keel_tasks WHERE owner = @owner AND `+live+` ORDER BY seq`,
		pgx.NamedArgs{"owner": owner, "now": s.now().UnixNano()})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*mcp.TaskRecord
	for rows.Next() {
		rec, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// Delete implements mcp.TaskStore.
func (s *TaskStore) Delete(ctx context.Context, owner, id string) error {
	defer s.setRun(id, false)
	return pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM keel_tasks WHERE id = @id AND owner = @owner AND `+live,
			pgx.NamedArgs{"id": id, "owner": owner, "now": s.now().UnixNano()})
		switch {
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			return mcp.ErrTaskNotFound
		}
		return s.db.notify(ctx, tx, chanTasks, id)
	})
}

// Advisory lock classes of the bounds (the two-key form of
// pg_advisory_xact_lock): one per quota key, one for the bounds in all.
const (
	lockQuota = 0x6b71 // "kq"
	lockTotal = 0x6b74 // "kt"
)

// lockBounds takes the advisory locks under which the bounds of quota are
// counted: the one of the bounds in all first when lim has any.
func lockBounds(ctx context.Context, tx pgx.Tx, quota string, lim mcp.TaskLimits) error {
	if lim.MaxTasksTotal > 0 || lim.MaxFinishedBytesTotal > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, int32(lockTotal)); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(lockQuota), quota)
	return err
}

// purge deletes expired records that no transaction holds.
func (s *TaskStore) purge(ctx context.Context, tx pgx.Tx, now int64) error {
	_, err := tx.Exec(ctx, `DELETE FROM keel_tasks WHERE id IN (
		SELECT id FROM keel_tasks WHERE expires_at <> 0 AND expires_at <= $1 FOR UPDATE SKIP LOCKED)`, now)
	return err
}

// Create implements mcp.TaskStore.
func (s *TaskStore) Create(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits) error {
	s.lim.Store(&lim)
	body, err := encodeBody(rec)
	if err != nil {
		return err
	}
	now := s.now().UnixNano()
	var seq int64
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		if err := lockBounds(ctx, tx, rec.Quota, lim); err != nil {
			return err
		}
		if err := s.purge(ctx, tx, now); err != nil {
			return err
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM keel_tasks WHERE id = $1)`, rec.ID).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("%w: %q", mcp.ErrTaskExists, rec.ID)
		}
		if err := s.admit(ctx, tx, rec, lim, now); err != nil {
			return err
		}
		var leaseOwner string
		var leaseUntil int64
		if !rec.Terminal() {
			leaseOwner, leaseUntil = s.db.id, now+s.lease.Nanoseconds()
		} else if err := s.makeRoom(ctx, tx, rec.Quota, rec.Size, lim, now); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO keel_tasks (id, owner, quota, revision, seq, version, terminal, finished_seq, size, expires_at, body, lease_owner, lease_until)
			VALUES (@id, @owner, @quota, @revision, nextval('keel_task_seq'), 1, @terminal,
				CASE WHEN @terminal THEN nextval('keel_task_seq') END, @size, @exp, @body, @leaseOwner, @leaseUntil)
			RETURNING seq`,
			pgx.NamedArgs{"id": rec.ID, "owner": rec.Owner, "quota": rec.Quota, "revision": rec.Revision, "terminal": rec.Terminal(),
				"size": rec.Size, "exp": nanos(rec.ExpiresAt), "body": body, "leaseOwner": leaseOwner, "leaseUntil": leaseUntil}).Scan(&seq)
		if err != nil {
			return err
		}
		if rec.Terminal() {
			return s.evict(ctx, tx, rec.Quota, lim, now)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rec.Seq, rec.Version = uint64(seq), 1
	if !rec.Terminal() {
		s.setRun(rec.ID, true)
	}
	return nil
}

// admit returns the *mcp.TaskLimitError of the bound a new record would
// exceed, or nil.
func (s *TaskStore) admit(ctx context.Context, tx pgx.Tx, rec *mcp.TaskRecord, lim mcp.TaskLimits, now int64) error {
	if rec.Terminal() {
		return s.room(ctx, tx, rec.Quota, rec.Size, lim, now)
	}
	count := func(where string, args ...any) (n int64, err error) {
		err = tx.QueryRow(ctx, `SELECT count(*) FROM keel_tasks WHERE NOT terminal AND (expires_at = 0 OR expires_at > $1)`+where, args...).Scan(&n)
		return n, err
	}
	if lim.MaxTasks > 0 {
		n, err := count(` AND quota = $2`, now, rec.Quota)
		if err != nil {
			return err
		}
		if n >= int64(lim.MaxTasks) {
			return &mcp.TaskLimitError{Limit: mcp.TaskLimitMaxTasks, Max: int64(lim.MaxTasks)}
		}
	}
	if lim.MaxTasksTotal > 0 {
		n, err := count(``, now)
		if err != nil {
			return err
		}
		if n >= int64(lim.MaxTasksTotal) {
			return &mcp.TaskLimitError{Limit: mcp.TaskLimitMaxTasksTotal, Max: int64(lim.MaxTasksTotal)}
		}
	}
	if lim.MaxFinishedBytesTotal > 0 {
		all, err := finishedBytes(ctx, tx, now)
		if err != nil {
			return err
		}
		if all+mcp.TaskRecordOverhead > lim.MaxFinishedBytesTotal {
			return &mcp.TaskLimitError{Limit: mcp.TaskLimitMaxFinishedBytesTotal, Max: lim.MaxFinishedBytesTotal}
		}
	}
	return nil
}

// finishedBytes counts the terminal records of all quotas (Size plus
// overhead each).
func finishedBytes(ctx context.Context, tx pgx.Tx, now int64) (n int64, err error) {
	err = tx.QueryRow(ctx, `SELECT coalesce(sum(size + $2), 0)::bigint FROM keel_tasks WHERE terminal AND (expires_at = 0 OR expires_at > $1)`,
		now, int64(mcp.TaskRecordOverhead)).Scan(&n)
	return n, err
}

// finished is one terminal record of a quota, in the order it finished.
type finished struct {
	id    string
	bytes int64
}

func finishedOf(ctx context.Context, tx pgx.Tx, quota string, now int64) ([]finished, error) {
	rows, err := tx.Query(ctx, `SELECT id, size + $3 FROM keel_tasks WHERE terminal AND quota = $1 AND (expires_at = 0 OR expires_at > $2)
		ORDER BY finished_seq`, quota, now, int64(mcp.TaskRecordOverhead))
	if err != nil {
		return nil, err
	}
	var out []finished
	for rows.Next() {
		var f finished
		if err := rows.Scan(&f.id, &f.bytes); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, f)
	}
	rows.Close()
	return out, rows.Err()
}

// room returns the *mcp.TaskLimitError of MaxFinishedBytesTotal when a
// record of quota becoming terminal with size bytes (over zero) would not
// fit even once the quota's other finished records were deleted.
func (s *TaskStore) room(ctx context.Context, tx pgx.Tx, quota string, size int64, lim mcp.TaskLimits, now int64) error {
	maxAll := lim.MaxFinishedBytesTotal
	if maxAll <= 0 || size <= 0 {
		return nil
	}
	all, err := finishedBytes(ctx, tx, now)
	if err != nil {
		return err
	}
	var own int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(size + $3), 0)::bigint FROM keel_tasks WHERE terminal AND quota = $1 AND (expires_at = 0 OR expires_at > $2)`,
		quota, now, int64(mcp.TaskRecordOverhead)).Scan(&own); err != nil {
		return err
	}
	if all-own+size+mcp.TaskRecordOverhead > maxAll {
		return &mcp.TaskLimitError{Limit: mcp.TaskLimitMaxFinishedBytesTotal, Max: maxAll}
	}
	return nil
}

// makeRoom deletes the quota's oldest finished records while a record of
// size bytes becoming terminal would take the finished records of all
// quotas over MaxFinishedBytesTotal.
func (s *TaskStore) makeRoom(ctx context.Context, tx pgx.Tx, quota string, size int64, lim mcp.TaskLimits, now int64) error {
	maxAll := lim.MaxFinishedBytesTotal
	if maxAll <= 0 {
		return nil
	}
	all, err := finishedBytes(ctx, tx, now)
	if err != nil || all+size+mcp.TaskRecordOverhead <= maxAll {
		return err
	}
	fin, err := finishedOf(ctx, tx, quota, now)
	if err != nil {
		return err
	}
	var drop []string
	for len(fin) > 0 && all+size+mcp.TaskRecordOverhead > maxAll {
		drop, all, fin = append(drop, fin[0].id), all-fin[0].bytes, fin[1:]
	}
	return deleteIDs(ctx, tx, drop)
}

// evict deletes the quota's oldest finished records beyond the bounds
// (the one just finished last).
func (s *TaskStore) evict(ctx context.Context, tx pgx.Tx, quota string, lim mcp.TaskLimits, now int64) error {
	maxN, maxB, maxAll := lim.MaxFinishedTasks, lim.MaxFinishedBytes, lim.MaxFinishedBytesTotal
	if maxN <= 0 && maxB <= 0 && maxAll <= 0 {
		return nil
	}
	// Count first; read the rows only when some must go.
	var n, own, all int64
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(size + $3), 0)::bigint FROM keel_tasks
		WHERE terminal AND quota = $1 AND (expires_at = 0 OR expires_at > $2)`, quota, now, int64(mcp.TaskRecordOverhead)).Scan(&n, &own); err != nil {
		return err
	}
	if maxAll > 0 {
		var err error
		if all, err = finishedBytes(ctx, tx, now); err != nil {
			return err
		}
	}
	if (maxN <= 0 || n <= int64(maxN)) && (maxB <= 0 || own <= maxB) && (maxAll <= 0 || all <= maxAll) {
		return nil
	}
	fin, err := finishedOf(ctx, tx, quota, now)
	if err != nil {
		return err
	}
	var drop []string
	for len(fin) > 0 && ((maxN > 0 && len(fin) > maxN) || (maxB > 0 && own > maxB) || (maxAll > 0 && all > maxAll)) {
		drop = append(drop, fin[0].id)
		own, all, fin = own-fin[0].bytes, all-fin[0].bytes, fin[1:]
	}
	return deleteIDs(ctx, tx, drop)
}

func deleteIDs(ctx context.Context, tx pgx.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM keel_tasks WHERE id = ANY($1)`, ids)
	return err
}

// Update implements mcp.TaskStore.
func (s *TaskStore) Update(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits) error {
	if rec.Terminal() {
		// The run is over, whether this write lands or not: the lease is no
		// longer renewed, so a record the host could not finish is failed
		// by the sweeper rather than kept working.
		defer s.setRun(rec.ID, false)
	}
	s.lim.Store(&lim)
	return s.update(ctx, rec, lim, 0)
}

// update is Update; with expiredBy not zero (the sweeper), it also fails
// with ErrTaskConflict unless the record's lease expired before
// expiredBy (Unix nanoseconds), checked under the row's lock.
func (s *TaskStore) update(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits, expiredBy int64) error {
	body, err := encodeBody(rec)
	if err != nil {
		return err
	}
	now := s.now().UnixNano()
	var quota string
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		if rec.Terminal() {
			// The bounds are counted under the quota's lock, taken before
			// the row's (as Create does): read the quota first.
			err := tx.QueryRow(ctx, `SELECT quota FROM keel_tasks WHERE id = $1`, rec.ID).Scan(&quota)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return mcp.ErrTaskNotFound
			case err != nil:
				return err
			}
			if err := lockBounds(ctx, tx, quota, lim); err != nil {
				return err
			}
		}
		var owner string
		var version, exp, leaseUntil int64
		var terminal bool
		err := tx.QueryRow(ctx, `SELECT owner, quota, version, expires_at, terminal, lease_until FROM keel_tasks WHERE id = $1 FOR UPDATE`, rec.ID).
			Scan(&owner, &quota, &version, &exp, &terminal, &leaseUntil)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return mcp.ErrTaskNotFound
		case err != nil:
			return err
		case owner != rec.Owner || (exp != 0 && exp <= now):
			return mcp.ErrTaskNotFound
		case uint64(version) != rec.Version:
			return mcp.ErrTaskConflict
		case expiredBy != 0 && leaseUntil >= expiredBy:
			return mcp.ErrTaskConflict // renewed meanwhile
		}
		finishing := !terminal && rec.Terminal()
		if finishing {
			if err := s.room(ctx, tx, quota, rec.Size, lim, now); err != nil {
				return err
			}
			if err := s.purge(ctx, tx, now); err != nil {
				return err
			}
			if err := s.makeRoom(ctx, tx, quota, rec.Size, lim, now); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE keel_tasks SET version = version + 1, terminal = @terminal,
			finished_seq = CASE WHEN NOT @terminal THEN NULL WHEN terminal THEN finished_seq ELSE nextval('keel_task_seq') END,
			size = @size, expires_at = @exp, body = @body WHERE id = @id`,
			pgx.NamedArgs{"id": rec.ID, "terminal": rec.Terminal(), "size": rec.Size, "exp": nanos(rec.ExpiresAt), "body": body})
		if err != nil {
			return err
		}
		if finishing {
			if err := s.evict(ctx, tx, quota, lim, now); err != nil {
				return err
			}
		}
		return s.db.notify(ctx, tx, chanTasks, rec.ID)
	})
	if err != nil {
		return err
	}
	rec.Version++
	rec.Quota = quota
	return nil
}

// WatchTaskChanges implements mcp.TaskChangeSource: changed is called
// with the id of every record another replica updates or deletes, one
// call at a time, until stop is called. Since a change made while the
// replica's LISTEN connection is down is never notified to it, changed is
// also called with the id of every task this instance runs once that
// connection is back and on every lease tick (LeaseTimeout/3); a Server
// re-reads the record, so a repeat is harmless.
func (s *TaskStore) WatchTaskChanges(changed func(id string)) (stop func()) {
	return s.db.subscribe(chanTasks, func(origin, id string) {
		if origin != s.db.id {
			changed(id)
		}
	}, func() {
		for _, id := range s.runIDs() {
			changed(id)
		}
	})
}
