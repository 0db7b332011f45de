// Package pgtest gives tests a PostgreSQL database of their own: the DSN of
// the server named by KEEL_TEST_POSTGRES_DSN, narrowed to a schema created
// for one test and dropped after it. Without the variable the test is
// skipped with a message naming it, so `go test ./...` runs anywhere and CI
// (which sets it, see .ci/postgres.sh) runs the PostgreSQL paths too.
//
// `go test ./...` shows a passing package's output only with -v, so a skip
// alone would go unseen: the first skip of a test binary also writes one
// line naming the package and the variable to the terminal (/dev/tty),
// when there is one.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// EnvDSN names the variable holding the PostgreSQL DSN the tests use.
const EnvDSN = "KEEL_TEST_POSTGRES_DSN"

// DSN returns the configured PostgreSQL DSN, or skips t when EnvDSN is unset.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		noticeOnce.Do(func() {
			if w, err := openNotice(); err == nil {
				fmt.Fprintf(w, "%s: PostgreSQL tests skipped: %s\n", strings.TrimSuffix(filepath.Base(os.Args[0]), ".test"), howToRun)
				w.Close()
			}
		})
		t.Skipf("PostgreSQL tests skipped: %s", howToRun)
	}
	return dsn
}

// howToRun says how to run the skipped tests.
var howToRun = fmt.Sprintf("set %s to a PostgreSQL DSN (for example eval \"$(.ci/postgres.sh)\") to run them", EnvDSN)

var (
	noticeOnce sync.Once
	// openNotice opens where the skip notice goes: the terminal, which
	// `go test` does not buffer. Tests replace it.
	openNotice = func() (io.WriteCloser, error) { return os.OpenFile("/dev/tty", os.O_WRONLY, 0) }
)

// Schema creates a schema of its own for t (dropped when t ends) on the
// configured server and returns a DSN whose search_path is that schema.
// It skips t when EnvDSN is unset and fails it when the server refuses.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	schema := "keel_test_" + strings.ToLower(rand.Text())
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", EnvDSN, err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", dsn); err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE") //nolint:errcheck // best effort: the server may be gone
			db.Close()
		}
	})
	out, err := WithSearchPath(dsn, schema)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvDSN, err)
	}
	return out
}

// WithSearchPath returns dsn (a postgres:// URL or a key=value string)
// with its search_path set to schema.
func WithSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parsing DSN: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " search_path=" + schema, nil
}
