package captest_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"storebench/internal/kv"
	_ "storebench/internal/server/postgres" // registers "postgres"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload/worktest/captest"
)

// isolationTable is a table of the workloads' (conn.OwnTables) for this
// test: the targets' Reset empties it as it would perf1 or usertable.
const isolationTable = "captest_isolation"

func init() { conn.AddOwnTables(isolationTable) }

// Two tests' databases on the shared PostgreSQL server are apart: a
// Reset through one (a fresh step of another package's test) leaves the
// other's rows. With URI returning the server's own database to both,
// the Reset would empty the other's table, the flaky failure of the
// documents test that made URI give each test a database of its own.
func TestURIGivesEachTestItsOwnPostgresDatabase(t *testing.T) {
	shared := servertest.URI(t, "postgres")
	a, b := captest.URI(t, "postgres", "captest_a"), captest.URI(t, "postgres", "captest_b")
	if a == b || a == shared || b == shared {
		t.Fatalf("URIs not apart: a is the shared one: %v, b is: %v, a is b: %v", a == shared, b == shared, a == b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ha, hb := openPG(t, a), openPG(t, b)
	for _, h := range []io.Closer{ha, hb} {
		exec(t, ctx, h, "CREATE TABLE IF NOT EXISTS "+pgx.Identifier{isolationTable}.Sanitize()+" (k bigint)")
	}
	exec(t, ctx, ha, "INSERT INTO "+pgx.Identifier{isolationTable}.Sanitize()+" VALUES (1)")
	exec(t, ctx, hb, "INSERT INTO "+pgx.Identifier{isolationTable}.Sanitize()+" VALUES (2)")
	r, ok := ha.(target.Resetter)
	if !ok {
		t.Fatalf("the postgres target's handle %T has no Reset", ha)
	}
	if err := r.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(t, ctx, ha); n != 0 {
		t.Errorf("the reset database still has %d rows: Reset did not empty the table, so the test proves nothing", n)
	}
	if n := rows(t, ctx, hb); n != 1 {
		t.Errorf("the other test's database has %d rows after a Reset through the first; want its 1", n)
	}
}

// openPG opens the postgres target at uri until the test ends.
func openPG(t *testing.T, uri string) io.Closer {
	t.Helper()
	info, err := target.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	h, err := info.Open(target.Options{URI: uri, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func exec(t *testing.T, ctx context.Context, h io.Closer, stmt string) {
	t.Helper()
	if _, err := h.(conn.Postgres).PostgresPool().Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func rows(t *testing.T, ctx context.Context, h io.Closer) (n int) {
	t.Helper()
	if err := h.(conn.Postgres).PostgresPool().QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{isolationTable}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
