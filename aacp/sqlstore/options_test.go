package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/aacp/storetest"
	"github.com/keelmcp/keel/internal/pgtest"
)

// Invalid options fail the open with an error that names the option.
func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  sqlstore.Option
		want string
	}{
		{sqlstore.WithReadConns(0), "WithReadConns(0)"},
		{sqlstore.WithWriters(-1), "WithWriters(-1)"},
		{sqlstore.WithMaxBatch(0), "WithMaxBatch(0)"},
		{sqlstore.WithSynchronous("OFF"), `synchronous "OFF"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := sqlstore.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"), tc.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if tc.want != `synchronous "OFF"` { // SQLite's own
				_, err = sqlstore.OpenPostgres("postgres://127.0.0.1:1/none", tc.opt)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
			}
		})
	}
}

// Acknowledgments of more pairs than one statement carries, with a pair
// given twice (its highest seq counts), written by several writers: every
// pair's ack is raised and exactly its messages at or below it become
// COMPLETED.
func testManyAcks(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	now := time.Now()
	const pairs = 300
	var acks []aacp.Ack
	ids := make([][]string, pairs)
	for i := range pairs {
		src := fmt.Sprintf("src-%03d", i)
		for seq := uint64(1); seq <= 3; seq++ {
			req := storetest.Request(src, "dst", now)
			m := storetest.Message(req, seq, now)
			require.NoError(t, s.Enqueue(ctx, req, m, aacp.Fence{}))
			ids[i] = append(ids[i], m.MessageID)
		}
		acks = append(acks, aacp.Ack{Source: src, Target: "dst", Seq: uint64(1 + i%2)})
		if i%50 == 0 {
			acks = append(acks, aacp.Ack{Source: src, Target: "dst", Seq: 1})
		}
	}
	require.NoError(t, s.Acknowledge(ctx, acks))
	for i := range pairs {
		src := fmt.Sprintf("src-%03d", i)
		want := uint64(1 + i%2)
		got, err := s.GetAck(ctx, src, "dst")
		require.NoError(t, err)
		require.Equal(t, want, got, src)
		for k, id := range ids[i] {
			m, err := s.GetMessageRecord(ctx, id)
			require.NoError(t, err)
			wantStatus := aacp.OutcomeUnknown
			if uint64(k+1) <= want {
				wantStatus = aacp.OutcomeCompleted
			}
			require.Equal(t, wantStatus, m.Status, "%s seq %d", src, k+1)
		}
	}
	// Acknowledgments never go back.
	require.NoError(t, s.Acknowledge(ctx, []aacp.Ack{{Source: "src-001", Target: "dst", Seq: 1}}))
	got, err := s.GetAck(ctx, "src-001", "dst")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), got)
}

func TestManyAcksSQLite(t *testing.T) { testManyAcks(t, openSQLite(t)) }

func TestManyAcksPostgres(t *testing.T) {
	s, err := sqlstore.OpenPostgres(pgtest.Schema(t), sqlstore.WithWriters(3))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	testManyAcks(t, s)
}
