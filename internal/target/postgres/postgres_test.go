package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"storebench/internal/kv"
	_ "storebench/internal/server/postgres"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "postgres", "postgres", "postgres", "postgresql")
	servers.ModuleVersion(t, "github.com/jackc/pgx/v5", "v5.12.0")
}

// One server serves every subtest.
func TestWithServer(t *testing.T) {
	uri := servertest.URI(t, "postgres")
	open := func(t *testing.T, d kv.Durability) any {
		h := servers.Open(t, "postgres", target.Options{URI: uri, Durability: d})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The workloads' layouts are checked in their packages (ledger's and
	// ycsb's TestLayoutOnServerTargets, pointselect's
	// TestSelectOnServerTargets).
	t.Run("SyncSettings", func(t *testing.T) {
		h := open(t, kv.Sync)
		s := servers.Settings(t, h, "layout.ledger", "batch")
		t.Logf("settings: %v", s)
		if s["durability"] == "" || s["durability"][:22] != "synchronous_commit=on " {
			t.Errorf("sync durability %q", s["durability"])
		}
	})
	t.Run("AsyncSettings", func(t *testing.T) {
		h := open(t, kv.Async)
		if d := servers.Settings(t, h)["durability"]; d[:23] != "synchronous_commit=off " {
			t.Errorf("async durability %q", d)
		}
	})
	t.Run("IntSelect", func(t *testing.T) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, uri)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows := map[int64]int64{1: 0, 2: -7, 3: 1 << 30, 99: 42}
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS ps_accounts; CREATE TABLE ps_accounts (aid integer PRIMARY KEY, abalance integer)", pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
		for k, v := range rows {
			if _, err := conn.Exec(ctx, "INSERT INTO ps_accounts VALUES ($1, $2)", k, v); err != nil {
				t.Fatal(err)
			}
		}
		// The select connection runs detached from the caller's context
		// and is interrupted when it ends: a select blocked behind
		// another session's lock on the table returns the context's error
		// soon after, and no later select starts.
		sc, err := open(t, kv.Async).(target.IntSelecter).PrepareIntSelect(ctx, `SELECT "abalance" FROM "ps_accounts" WHERE "aid" = $1`)
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		cctx, cancel := context.WithCancel(ctx)
		if v, ok, err := sc.Select(cctx, 2); v != -7 || !ok || err != nil {
			t.Fatalf("select 2: %d %v %v", v, ok, err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "LOCK TABLE ps_accounts IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		_, _, err = sc.Select(cctx, 3)
		if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 10*time.Second {
			t.Fatalf("blocked select after the context ended: %v after %v", err, took)
		}
		if _, _, err := sc.Select(cctx, 3); !errors.Is(err, context.Canceled) {
			t.Fatalf("a select after the context ended: %v", err)
		}
		tx.Rollback(ctx)

		// The server's error is the select's error, and the connection's
		// replies stay in step: a statement prepared for an integer
		// column fails once the column is a bigint, each time, cleanly.
		sc2, err := open(t, kv.Async).(target.IntSelecter).PrepareIntSelect(ctx, `SELECT "abalance" FROM "ps_accounts" WHERE "aid" = $1`)
		if err != nil {
			t.Fatal(err)
		}
		defer sc2.Close()
		if v, ok, err := sc2.Select(ctx, 99); v != 42 || !ok || err != nil {
			t.Fatalf("select 99: %d %v %v", v, ok, err)
		}
		if _, err := conn.Exec(ctx, "ALTER TABLE ps_accounts ALTER COLUMN abalance TYPE bigint"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if _, _, err := sc2.Select(ctx, 99); err == nil || !strings.Contains(err.Error(), "SQLSTATE 0A000") {
				t.Fatalf("select after the column changed type (try %d): %v, want the server's 0A000", i, err)
			}
		}
	})
	// A role the server does not know is refused without the password
	// showing.
	t.Run("RefusedCredentials", func(t *testing.T) {
		servers.OpenFails(t, "postgres", servers.WithCredentials(uri, "nobody"))
	})
}

func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "postgres", "postgres://bench:%s@127.0.0.1:%d/storebench?sslmode=disable")
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "postgres", "postgres://bench:%s@127.0.0.1:%d/storebench?sslmode=disable")
}
