package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
)

// A durable ledger in a SQLite file: the request and its outcome survive
// the process.
func ExampleOpenSQLite() {
	dir, _ := os.MkdirTemp("", "ledger")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := sqlstore.OpenSQLite(filepath.Join(dir, "ledger.db"))
	if err != nil {
		panic(err)
	}
	mux := aacp.NewMux()
	mux.HandleFunc("upper", func(_ context.Context, env *aacp.Envelope) (any, error) {
		var s string
		err := env.Decode(&s)
		return fmt.Sprintf("%q!", s), err
	})
	node := aacp.New(store, mux, nil)
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	id, _ := node.Submit(ctx, "client", "upper", "keel")
	res, _ := node.Await(ctx, id)
	fmt.Println(res.Outcome, string(res.Result))
	node.Close(ctx)
	store.Close()

	// Another process (or this one, later) opens the same file.
	store, _ = sqlstore.OpenSQLite(filepath.Join(dir, "ledger.db"))
	defer store.Close()
	rec, _ := store.GetRequestRecord(ctx, id)
	fmt.Println(rec.Status, rec.Completion)
	// Output:
	// COMPLETED "\"keel\"!"
	// COMPLETED success
}
