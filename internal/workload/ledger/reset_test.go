package ledger_test

import (
	"context"
	"errors"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/mariadb"
	_ "storebench/internal/server/postgres"
	"storebench/internal/target"
	_ "storebench/internal/target/mysql"
	_ "storebench/internal/target/postgres"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest/captest"
)

// A fresh ladder step empties the ledger's tables on a SQL server (the
// target's Reset, of the tables the layouts declare) and leaves a table
// that is not storebench's alone, in the database it runs in (the test's
// own, so that other packages' tests keep their tables).
func TestResetEmptiesTheLedgerTablesOnly(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := captest.Open(t, name, target.Options{URI: captest.URI(t, name, "ledger_test"), Durability: kv.Async})
			t.Cleanup(func() { h.Close() })
			s, _, ok := ledger.StoreOf(h)
			db, isSQL := h.(target.SQLDB)
			r, resets := h.(target.Resetter)
			if !ok || !isSQL || !resets {
				t.Fatalf("%T: ledger layout %v, SQL %v, Reset %v", h, ok, isSQL, resets)
			}
			if err := ledger.Prepare(ctx, s); err != nil {
				t.Fatal(err)
			}
			addr := make([]byte, 32)
			addr[0] = 7
			if err := s.PutTxs(ctx, []ledger.Tx{{Address: addr, Prev: make([]byte, 32), Genesis: addr, Payload: []byte("x")}}); err != nil {
				t.Fatal(err)
			}
			if err := s.PutBalances(ctx, [][]byte{addr}, []uint64{5}); err != nil {
				t.Fatal(err)
			}
			if err := db.ExecDDL(ctx, "DROP TABLE IF EXISTS not_storebench", "CREATE TABLE not_storebench (k int)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.ExecDDL(context.Background(), "DROP TABLE IF EXISTS not_storebench") })
			if _, err := db.Exec(ctx, "INSERT INTO not_storebench (k) VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if err := r.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetTx(ctx, addr); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("transaction after Reset: %v, want not found", err)
			}
			if _, err := s.GetBalance(ctx, addr); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("balance after Reset: %v, want not found", err)
			}
			rows := 0
			if err := db.Query(ctx, "SELECT k FROM not_storebench", nil, func([][]byte) bool { rows++; return true }); err != nil {
				t.Fatal(err)
			}
			if rows != 1 {
				t.Errorf("Reset emptied a table that is not storebench's: %d rows left, want 1", rows)
			}
		})
	}
}
