package systest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// Store returns the store of a database of the test's own, migrated to the
// newest schema, and a plain pool on the same database for what a test must
// set up or read with SQL of its own. Both close, and the database is
// dropped, when the test ends.
func Store(t testing.TB) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	dsn := testsvc.Postgres(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return st, pool
}
