package postgres_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
)

// What the postgres targets declare of the managed server's connections
// (target.Info.ManagedClients, which the coordinator checks workers ×
// concurrency against before anything starts) is what the managed server
// accepts: its max_connections less the superuser reserve.
func TestManagedClients(t *testing.T) {
	inst := servertest.Start(t, "postgres", kv.Async)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, inst.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	setting := func(name string) int {
		var v string
		if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s = %q", name, v)
		}
		return n
	}
	want := setting("max_connections") - setting("superuser_reserved_connections")
	for _, name := range []string{"postgres", "postgis"} {
		info, err := target.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if info.ManagedClients != want {
			t.Errorf("%s declares ManagedClients %d; the managed server accepts %d", name, info.ManagedClients, want)
		}
	}
}
