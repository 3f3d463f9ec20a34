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
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/postgres"
	"storebench/internal/workload"
	"storebench/internal/workload/pointselect"
	"storebench/internal/workload/worktest"
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
	uri := servertest.URI(t, "postgres")
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
	uri := servertest.URI(t, "postgres")
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
	uri := servertest.URI(t, "postgres")
	table(t, uri, 1000)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	go func() {
		time.Sleep(700 * time.Millisecond)
		_, _ = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT \"abalance\" FROM \"ps_events\"%' AND pid <> pg_backend_pid()")
	}()
	t0 := time.Now()
	_, err, _ = run(t, uri, 1000, "20s", "events")
	if err == nil || !strings.Contains(err.Error(), "postgres connection") || time.Since(t0) > 15*time.Second {
		t.Fatalf("after the session was terminated: %v after %v", err, time.Since(t0))
	}
	t.Logf("%v", err)
}
