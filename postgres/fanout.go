package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// FanOut is an mcp.FanOut over PostgreSQL LISTEN/NOTIFY: each change a
// replica publishes reaches every other replica sharing the database
// once, and never the one that published it. A change whose JSON is
// larger than fits a NOTIFY payload (MaxNotifyPayload) is stored in a
// table, keel_fanout_payloads, and its row id is notified instead; rows
// older than PayloadRetention are deleted as new ones come. A change over
// MaxChangeBytes is refused with an error naming the limit.
//
// Delivery follows the listener connection: a replica whose connection
// was lost misses the changes published until it is back; it then
// delivers the tools, resources and prompts list changes, so that clients
// list them again (a missed NotifyAll, resource update or task status is
// not recovered: tasks/get has the status).
type FanOut struct{ db *DB }

var _ mcp.FanOut = (*FanOut)(nil)

// Limits of FanOut.
const (
	// MaxNotifyPayload is the largest change sent inline in a NOTIFY
	// (PostgreSQL refuses payloads of 8000 bytes or more; the replica id
	// and a marker take the rest).
	MaxNotifyPayload = 7900
	// MaxChangeBytes bounds the JSON of one change.
	MaxChangeBytes = 1 << 20
)

// payloadReadTimeout bounds the read of a stored change.
const payloadReadTimeout = 5 * time.Second

// PayloadRetention is how long a stored payload is kept for the replicas
// to read: it is read as soon as its notification arrives.
const PayloadRetention = "5 minutes"

// NewFanOut returns the fan-out of db. Its subscriptions end when db is
// closed.
func NewFanOut(db *DB) *FanOut { return &FanOut{db: db} }

// Publish implements mcp.FanOut.
func (f *FanOut) Publish(ctx context.Context, c mcp.Change) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("postgres: encode change: %w", err)
	}
	switch {
	case len(b) > MaxChangeBytes:
		return fmt.Errorf("postgres: a change of %d bytes is over MaxChangeBytes (%d)", len(b), MaxChangeBytes)
	case len(b)+len(f.db.id)+1 <= MaxNotifyPayload:
		return f.db.notify(ctx, f.db.pool, chanFanOut, string(b))
	}
	tx, err := f.db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.Exec(ctx, `DELETE FROM keel_fanout_payloads WHERE created_at < now() - $1::interval`, PayloadRetention); err != nil {
		return err
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO keel_fanout_payloads (payload) VALUES ($1) RETURNING id`, b).Scan(&id); err != nil {
		return err
	}
	if err := f.db.notify(ctx, tx, chanFanOut, "@"+strconv.FormatInt(id, 10)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Subscribe implements mcp.FanOut.
func (f *FanOut) Subscribe(deliver func(mcp.Change)) (stop func()) {
	return f.db.subscribe(chanFanOut, func(origin, payload string) {
		if origin == f.db.id {
			return
		}
		b := []byte(payload)
		if ref, ok := strings.CutPrefix(payload, "@"); ok {
			id, err := strconv.ParseInt(ref, 10, 64)
			if err == nil {
				ctx, cancel := context.WithTimeout(f.db.life, payloadReadTimeout) // Close does not wait on a stalled read
				err = f.db.pool.QueryRow(ctx, `SELECT payload FROM keel_fanout_payloads WHERE id = $1`, id).Scan(&b)
				cancel()
			}
			if err != nil {
				f.db.log.Warn("postgres: a stored change could not be read: dropped", "id", ref, "error", err)
				return
			}
		}
		var c mcp.Change
		if err := json.Unmarshal(b, &c); err != nil {
			f.db.log.Warn("postgres: a change could not be decoded: dropped", "error", err)
			return
		}
		deliver(c)
	}, func() {
		for _, kind := range listKinds {
			deliver(mcp.Change{Kind: kind})
		}
	})
}

// listKinds are the Change kinds of the tools, resources and prompts list
// changes (the mcp package's wire of a fan-out).
var listKinds = []string{"tools", "resources", "prompts"}
