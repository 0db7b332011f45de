package sqlstore

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShiftParams(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT $1, $2`, `SELECT $4, $5`},
		{`unnest($1::text[], $10::bigint[])`, `unnest($4::text[], $13::bigint[])`},
		{`no parameters`, `no parameters`},
		{`a lone $ stays`, `a lone $ stays`},
		{`$1`, `$4`},
	} {
		assert.Equal(t, c.want, shiftParams(c.in, 3), c.in)
	}
}

// The PostgreSQL form of a grouped statement takes one array per column,
// typed as its columns say; a value of the wrong type is an error, not a
// silent conversion.
func TestPgArrays(t *testing.T) {
	rows := [][]any{{"a", nil, int64(7), 3}, {"b", "x", int64(-1), 0}}
	got, err := pgArrays("tnbi", rows)
	require.NoError(t, err)
	x := "x"
	assert.Equal(t, []any{[]string{"a", "b"}, []*string{nil, &x}, []int64{7, -1}, []int64{3, 0}}, got)

	for _, c := range []struct {
		cols string
		row  []any
	}{
		{"t", []any{nil}},
		{"t", []any{1}},
		{"n", []any{int64(1)}},
		{"b", []any{"1"}},
		{"i", []any{nil}},
	} {
		_, err := pgArrays(c.cols, [][]any{c.row})
		assert.Error(t, err, "%s %v", c.cols, c.row)
	}
}

// Every grouped statement has both forms, and its PostgreSQL form takes as
// many arrays as it has columns.
func TestGroupedStatementsComplete(t *testing.T) {
	for name, st := range multiRows {
		assert.NotEmpty(t, st.head, name)
		assert.NotEmpty(t, st.row, name)
		assert.NotEmpty(t, st.pg, name)
		assert.Equal(t, len(st.cols), countParams(st.row), "%s: SQLite row placeholders", name)
		assert.Contains(t, st.pg, "$"+strconv.Itoa(len(st.cols))+"::", "%s: last array", name)
		assert.NotContains(t, st.pg, "$"+strconv.Itoa(len(st.cols)+1), "%s: no array beyond the columns", name)
	}
}

func countParams(s string) int {
	n := 0
	for _, c := range s {
		if c == '?' {
			n++
		}
	}
	return n
}
