package pointselect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"storebench/internal/kv"
	"storebench/internal/measure/latency"
	_ "storebench/internal/server/postgres"
	"storebench/internal/target"
	_ "storebench/internal/target/postgres"
	"storebench/internal/workload"
	"storebench/internal/workload/pointselect"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
)

const study = `
name: t
targets: [postgres]
concurrency: 4
ladder: [1]
workloads:
  - name: pointselect
    params:
      table: ps_events
      key: aid
      value: abalance
      rows: %d
      duration: %s
      client: %s
`

// table makes ps_events with keys 1..rows, each value -key.
func table(t *testing.T, uri string, rows int) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		"DROP TABLE IF EXISTS ps_events",
		"CREATE TABLE ps_events (aid integer PRIMARY KEY, abalance integer NOT NULL)",
		fmt.Sprintf("INSERT INTO ps_events SELECT g, -g FROM generate_series(1, %d) g", rows),
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func run(t *testing.T, uri string, rows int, dur, client string) (*workload.Env, error, func() (int64, int64, float64, int64)) {
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
	env := &workload.Env{Target: h}
	st := worktest.Plan(t, pointselect.PointSelect{}, fmt.Sprintf(study, rows, dur, client))
	res, err := pointselect.PointSelect{}.Execute(context.Background(), env, st[0])
	return env, err, func() (int64, int64, float64, int64) {
		if res == nil {
			t.Fatalf("no result (%v)", err)
		}
		h, derr := latency.Decode(res.Hist)
		if derr != nil {
			t.Fatal(derr)
		}
		return res.Ops, res.Verify.Checked, res.Metrics["event_loops"], h.TotalCount()
	}
}

// On PostgreSQL's plain socket the selects run on the event loop (one
// loop on this machine's cores), every select answered and checked and
// timed into the histogram: the same accounting as the goroutine client.
func TestEventLoopSelectsAreCheckedAndTimed(t *testing.T) {
	uri := captest.URI(t, "postgres", "pointselect_test")
	table(t, uri, 1000)
	for _, client := range []string{"events", "goroutines"} {
		_, err, got := run(t, uri, 1000, "1s", client)
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		ops, checked, loops, histCount := got()
		t.Logf("%s: %d selects, %d checked, %v loops", client, ops, checked, loops)
		if ops < 100 || checked != ops || histCount != ops {
			t.Errorf("%s: %d selects, %d checked, %d in the histogram", client, ops, checked, histCount)
		}
		if (client == "events") != (loops >= 1) {
			t.Errorf("%s: event_loops %v", client, loops)
		}
	}
}

// A key with no row fails the run on the event loop as on the
// goroutine client, naming the key.
func TestEventLoopMissingRowFails(t *testing.T) {
	uri := captest.URI(t, "postgres", "pointselect_test")
	table(t, uri, 10)
	// Keys 1..100000 on a table of 10 rows: the first miss fails.
	_, err, _ := run(t, uri, 100000, "5s", "events")
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "no row with aid") {
		t.Fatalf("want a verify error naming the key, got %v", err)
	}
}

// A session the server ends mid-run (pg_terminate_backend) fails the run
// within the run's time with one error naming the connection, never a
// hang.
func TestEventLoopTerminatedSessionFails(t *testing.T) {
	uri := captest.URI(t, "postgres", "pointselect_test")
	table(t, uri, 1000)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	// The admin connection is closed only once its terminate is done: a
	// pgx connection is not for two goroutines at once (Close during the
	// Exec panicked in pgconn, "slow write timer already active").
	killed := make(chan struct{})
	defer func() {
		<-killed
		admin.Close(ctx)
	}()
	go func() {
		defer close(killed)
		time.Sleep(700 * time.Millisecond)
		// Only this test's sessions: its database is its own.
		_, _ = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT \"abalance\" FROM \"ps_events\"%' AND pid <> pg_backend_pid()")
	}()
	t0 := time.Now()
	_, err, _ = run(t, uri, 1000, "20s", "events")
	if err == nil || !strings.Contains(err.Error(), "postgres connection") || time.Since(t0) > 15*time.Second {
		t.Fatalf("after the session was terminated: %v after %v", err, time.Since(t0))
	}
	t.Logf("%v", err)
}

// A table that does not exist is made as pgbench -i makes
// pgbench_accounts (rows 1..rows, in batches of 1,000 and the rest), so
// the native-pgbench study runs on a fresh server; with create: no the
// step fails naming the table, and a table that exists is left as it is.
func TestAbsentTableIsMade(t *testing.T) {
	uri := captest.URI(t, "postgres", "pointselect_test")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	drop := func() {
		if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS ps_made"); err != nil {
			t.Fatal(err)
		}
	}
	drop()
	defer drop()
	info, _ := target.Lookup("postgres")
	h, err := info.Open(target.Options{URI: uri, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	execute := func(create string) (*workloadResult, error) {
		text := strings.Replace(fmt.Sprintf(study, 2500, "500ms", "events"), "table: ps_events", "table: ps_made\n      create: "+create, 1)
		st := worktest.Plan(t, pointselect.PointSelect{}, text)
		res, err := pointselect.PointSelect{}.Execute(ctx, &workload.Env{Target: h}, st[0])
		if res == nil {
			return nil, err
		}
		return &workloadResult{ops: res.Ops, checked: res.Verify.Checked, facts: res.Facts}, err
	}
	if _, err := execute("no"); err == nil || !strings.Contains(err.Error(), "ps_made") {
		t.Fatalf("create: no on an absent table: %v", err)
	}
	got, err := execute("absent")
	if err != nil {
		t.Fatal(err)
	}
	var rows, lo, hi int64
	if err := c.QueryRow(ctx, "SELECT COUNT(*), MIN(aid), MAX(aid) FROM ps_made").Scan(&rows, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if rows != 2500 || lo != 1 || hi != 2500 || got.ops == 0 || got.checked != got.ops || got.facts["table"] == "" {
		t.Fatalf("table of %d rows (%d..%d); %d selects, %d checked; facts %v", rows, lo, hi, got.ops, got.checked, got.facts)
	}
	// Made once: the second run finds it and says nothing of making it.
	if _, err := c.Exec(ctx, "UPDATE ps_made SET abalance = 7 WHERE aid = 1"); err != nil {
		t.Fatal(err)
	}
	again, err := execute("absent")
	if err != nil || again.facts["table"] != "" {
		t.Fatalf("second run: %v, facts %v", err, again.facts)
	}
	var v int64
	if err := c.QueryRow(ctx, "SELECT abalance FROM ps_made WHERE aid = 1").Scan(&v); err != nil || v != 7 {
		t.Fatalf("the existing table was changed: abalance %d, %v", v, err)
	}
}

type workloadResult struct {
	ops, checked int64
	facts        map[string]string
}
