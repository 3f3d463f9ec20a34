package pointselect_test

import (
	"context"
	"fmt"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
	_ "storebench/internal/target/mysql"
	"storebench/internal/workload/pointselect"
	"storebench/internal/workload/worktest/captest"
)

// The workload's select on each SQL server target, on a table the test
// makes through the target's own SQL connection (target.SQLDB): every
// row found with its value, a missing key not found, a missing table
// refused.
func TestSelectOnServerTargets(t *testing.T) {
	const table = "ps_targets"
	rows := map[int64]int64{1: 0, 2: -7, 3: 1 << 30, 99: 42}
	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := captest.Open(t, name, target.Options{URI: captest.URI(t, name, "pointselect_test"), Durability: kv.Async})
			defer h.Close()
			if _, ok := h.(target.IntSelecter); !ok {
				t.Fatalf("%T does not implement target.IntSelecter", h)
			}
			db, ok := h.(target.SQLDB)
			if !ok {
				t.Fatalf("%T does not implement target.SQLDB", h)
			}
			if err := db.ExecDDL(ctx, "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (aid INT PRIMARY KEY, abalance INT)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.ExecDDL(context.Background(), "DROP TABLE IF EXISTS "+table) })
			for k, v := range rows {
				if _, err := db.Exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, k, v)); err != nil {
					t.Fatal(err)
				}
			}
			c, err := pointselect.Open(ctx, h, table, "aid", "abalance")
			if err != nil {
				t.Fatalf("pointselect.Open: %v", err)
			}
			defer c.Close()
			for k, want := range rows {
				got, found, err := c.Select(ctx, k)
				if err != nil || !found || got != want {
					t.Errorf("Select %d = %d, %v, %v; want %d", k, got, found, err, want)
				}
			}
			if _, found, err := c.Select(ctx, -12345); err != nil || found {
				t.Errorf("Select of a missing key: found %v, %v", found, err)
			}
			if _, err := pointselect.Open(ctx, h, "no_such_table", "aid", "abalance"); err == nil {
				t.Errorf("pointselect.Open accepted a missing table")
			}
		})
	}
}
