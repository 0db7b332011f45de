package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/aacp/storetest"
	"github.com/keelmcp/keel/internal/pgtest"
)

// A request row whose error column cannot be decoded fails neither the
// list of pending requests nor a read: the list skips it, and the request
// ends FAILED (protocol_error) with the reason, readable from then on; the
// other requests are listed as they are.
func testBadRequestRow(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	now := time.Now()
	var ids []string
	for seq := uint64(1); seq <= 3; seq++ {
		req := storetest.Request("src", "dst", now)
		require.NoError(t, s.Enqueue(ctx, req, storetest.Message(req, seq, now), aacp.Fence{}))
		ids = append(ids, req.RequestID)
	}
	corrupt := func(id string) {
		q := `UPDATE aacp_requests SET error = '{"corrupt' WHERE request_id = ?`
		if s.Dialect() == "postgres" {
			q = strings.Replace(q, "?", "$1", 1)
		}
		_, err := s.DB().ExecContext(ctx, q, id)
		require.NoError(t, err)
	}
	corrupt(ids[0]) // met by a list
	corrupt(ids[1]) // met by a read

	rec, err := s.GetRequestRecord(ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeFailed, rec.Status)
	pending, err := s.ListPendingRequests(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, ids[2], pending[0].RequestID)
	for _, id := range ids[:2] {
		rec, err := s.GetRequestRecord(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, aacp.OutcomeFailed, rec.Status)
		assert.Equal(t, aacp.CompletionProtocolError, rec.Completion)
		assert.Equal(t, aacp.CodeProtocol, rec.Error.Code)
		assert.Contains(t, rec.Error.Message, "cannot be decoded: error column")
		assert.False(t, rec.CompletedAt.IsZero())
	}
}

func TestBadRequestRowSQLite(t *testing.T) { testBadRequestRow(t, openSQLite(t)) }

func TestBadRequestRowPostgres(t *testing.T) {
	s, err := sqlstore.OpenPostgres(pgtest.Schema(t))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	testBadRequestRow(t, s)
}
