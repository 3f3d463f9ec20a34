package ycsb_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
	"storebench/internal/workload/ycsb"
)

const eventStudy = `
name: t
ladder: [200]
concurrency: 3
targets: [x]
workloads:
  - name: ycsb
    params:
      workloads: [a, c, f, d]
      operations: 2000
      fields: 4
      field_length: 40
      distribution: uniform
`

// openEvented opens target name on the server make test shares (Redis:
// its database 10).
func openEvented(t *testing.T, name string) io.Closer {
	t.Helper()
	var uri string
	if name == "redis" {
		uri = strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/10"
	} else {
		uri = captest.URI(t, name, "ycsb_test")
	}
	h := captest.Open(t, name, target.Options{URI: uri, Durability: kv.Async})
	t.Cleanup(func() { h.Close() })
	return h
}

// YCSB on the event-loop client of Redis (HMGET/HSET), PostgreSQL and
// MariaDB (their lean sessions) and memcached (get, set, and gets then
// cas for an update): the load and workloads A, C, F and D
// run on event loops (event_loops > 0), every read verified; then one
// field of every record is corrupted behind the workload's back, and
// workload C fails verification on the event loop; client: goroutines
// runs without one.
func TestEventLoopClient(t *testing.T) {
	for _, name := range []string{"redis", "postgres", "mysql", "memcached"} {
		t.Run(name, func(t *testing.T) {
			h := openEvented(t, name)
			ctx := context.Background()
			steps := worktest.Plan(t, ycsb.YCSB{}, eventStudy)
			var c workload.Step
			for _, s := range steps {
				res, err := ycsb.YCSB{}.Execute(ctx, &workload.Env{Target: h}, s)
				if err != nil {
					t.Fatalf("%s: %v", s.Phase, err)
				}
				if res.Metrics["event_loops"] < 1 {
					t.Fatalf("%s ran on goroutines, not on an event loop", s.Phase)
				}
				if s.Phase == "c" {
					c = s
				}
				if s.Phase != "load" && (res.Ops != 2000 || res.Verify.Checked == 0) {
					t.Fatalf("%s: %d operations, %d reads verified", s.Phase, res.Ops, res.Verify.Checked)
				}
				if s.Phase == "a" && (res.ByOp["READ"].Count == 0 || res.ByOp["UPDATE"].Count == 0) {
					t.Fatalf("a: reads and updates not counted by class: %v", res.ByOp)
				}
			}
			gs := worktest.Plan(t, ycsb.YCSB{}, eventStudy, "ycsb.client=goroutines")
			res, err := ycsb.YCSB{}.Execute(ctx, &workload.Env{Target: h}, gs[2])
			if err != nil || res.Metrics["event_loops"] != 0 || res.Verify.Checked == 0 {
				t.Fatalf("client goroutines: event_loops %v, verified %d, %v", res.Metrics["event_loops"], res.Verify.Checked, err)
			}

			// One byte of field 2 of every record flipped.
			db, _ := ycsb.Of(h)
			for i := uint64(0); i < 200; i++ {
				k := ycsb.RecordKey(nil, i)
				f, err := db.Read(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				bad := append([]byte(nil), f[2]...)
				bad[len(bad)-1] ^= 1
				if err := db.Update(ctx, k, [][]byte{nil, nil, bad, nil}); err != nil {
					t.Fatal(err)
				}
			}
			_, err = ycsb.YCSB{}.Execute(ctx, &workload.Env{Target: h}, c)
			var ve *workload.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), "field2 is corrupt") {
				t.Fatalf("a corrupt field was not caught on the event loop: %v", err)
			}
		})
	}
}

// A connection the server kills fails the step at once, naming it:
// Redis (CLIENT KILL), PostgreSQL (pg_terminate_backend) and MariaDB
// (KILL CONNECTION).
func TestEventLoopKilledConnection(t *testing.T) {
	for _, name := range []string{"redis", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			h := openEvented(t, name)
			ctx := context.Background()
			steps := worktest.Plan(t, ycsb.YCSB{}, eventStudy, "ycsb.operations=1e9", "ycsb.workloads=[c]")
			if _, err := (ycsb.YCSB{}).Execute(ctx, &workload.Env{Target: h}, steps[0]); err != nil {
				t.Fatal(err)
			}
			// MariaDB: the newest connection id before the step (ids
			// grow; the step's connections are newer).
			var before string
			if name == "mysql" {
				err := h.(target.SQLDB).Query(ctx, "SELECT MAX(id) FROM information_schema.processlist", nil, func(cols [][]byte) bool {
					before = string(cols[0])
					return false
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				_, err := ycsb.YCSB{}.Execute(ctx, &workload.Env{Target: h}, steps[1])
				done <- err
			}()
			// reading says how many of the step's connections the
			// server sees reading; kill kills them.
			var reading func() (int, error)
			var kill func() error
			switch name {
			case "redis":
				rc := h.(conn.RESP).RESPClient()
				reading = func() (int, error) {
					list, err := rc.ClientList(ctx).Result()
					return strings.Count(list, "cmd=hmget"), err
				}
				kill = func() error { return rc.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err() }
			case "postgres":
				db := h.(target.SQLDB)
				const ours = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'SELECT field0%'"
				reading = func() (int, error) {
					n := 0
					err := db.Query(ctx, "SELECT count(*) "+ours, nil, func(cols [][]byte) bool {
						fmt.Sscan(string(cols[0]), &n)
						return false
					})
					return n, err
				}
				kill = func() error {
					return db.Query(ctx, "SELECT pg_terminate_backend(pid)::text "+ours, nil, func([][]byte) bool { return true })
				}
			case "mysql":
				// The step's connections are those opened since it began
				// seen executing a statement on usertable (the pool's run
				// none), collected over the polls: between two statements
				// a connection sleeps.
				db := h.(target.SQLDB)
				ids := map[string]bool{}
				reading = func() (int, error) {
					err := db.Query(ctx, "SELECT id FROM information_schema.processlist WHERE id > ? AND id <> CONNECTION_ID() AND db = DATABASE() AND command = 'Execute' AND info LIKE '%usertable%'", []any{before}, func(cols [][]byte) bool {
						ids[string(cols[0])] = true
						return true
					})
					return len(ids), err
				}
				kill = func() error {
					for id := range ids {
						// A connection seen once may have ended since (Error
						// 1094, unknown thread id): nothing left to kill.
						if err := db.ExecDDL(ctx, "KILL CONNECTION "+id); err != nil && !strings.Contains(err.Error(), "Error 1094") {
							return err
						}
					}
					return nil
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				n, err := reading()
				if err != nil {
					t.Fatal(err)
				}
				if n >= 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the step's 3 connections never read (%d seen)", n)
				}
				time.Sleep(20 * time.Millisecond)
			}
			killed := time.Now()
			if err := kill(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				t.Logf("failed %v after the kill: %v", time.Since(killed), err)
				if err == nil || !strings.Contains(err.Error(), "connection") {
					t.Fatalf("a killed connection did not fail the step: %v", err)
				}
				// MariaDB shuts the socket down at KILL without an ERR
				// packet (1927 never reaches the client, killed idle or
				// mid-statement): the close, named, is the whole reason.
				if name == "mysql" && !regexp.MustCompile(`connection [0-9]+: the server closed the connection`).MatchString(err.Error()) {
					t.Fatalf("a killed MariaDB connection: %v, want the connection named and its close", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the step went on 10 s after its connections were killed")
			}
		})
	}
}

// memcached kills no single connection on request: the server itself is
// stopped under the step's event loop, which closes every connection,
// and the step fails at once, naming the connection.
func TestEventLoopMemcachedServerStopped(t *testing.T) {
	inst := servertest.Start(t, "memcached", kv.Async)
	h := captest.Open(t, "memcached", target.Options{URI: inst.URI, Durability: kv.Async})
	t.Cleanup(func() { h.Close() })
	ctx := context.Background()
	steps := worktest.Plan(t, ycsb.YCSB{}, eventStudy, "ycsb.operations=1e9", "ycsb.workloads=[c]")
	if _, err := (ycsb.YCSB{}).Execute(ctx, &workload.Env{Target: h}, steps[0]); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ycsb.YCSB{}.Execute(ctx, &workload.Env{Target: h}, steps[1])
		done <- err
	}()
	// The step's 3 connections are open once the server counts them
	// (the target's own client holds one or two more).
	db, _ := ycsb.Of(h)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := db.Read(ctx, ycsb.RecordKey(nil, 0)); err != nil {
			t.Fatal(err)
		}
		if n := memcachedConns(t, inst.URI); n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step's connections never opened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := inst.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("failed %v after the stop began: %v", time.Since(killed), err)
		if err == nil || !strings.Contains(err.Error(), "connection") {
			t.Fatalf("a stopped server did not fail the step: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the step went on 10 s after its server stopped")
	}
}

// memcachedConns is the server's curr_connections.
func memcachedConns(t *testing.T, uri string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(uri, "memcached://"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("stats\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "STAT curr_connections "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
		if strings.HasPrefix(l, "END") {
			t.Fatal("stats without curr_connections")
		}
	}
}
