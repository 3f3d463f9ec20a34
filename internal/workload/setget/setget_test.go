package setget_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"storebench/internal/kv"
	"storebench/internal/measure/latency"
	"storebench/internal/results"
	_ "storebench/internal/server/memcached"
	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/memcached"
	_ "storebench/internal/target/redis"
	"storebench/internal/workload"
	"storebench/internal/workload/setget"
	"storebench/internal/workload/worktest"
)

// redisDB is the database of the shared Redis server these tests use
// (the redis target's own tests use 0 and 9).
const redisDB = 11

func uriOf(t *testing.T, name string) string {
	uri := servertest.URI(t, name)
	if name == "redis" {
		uri = strings.TrimSuffix(uri, "/0") + fmt.Sprintf("/%d", redisDB)
	}
	return uri
}

func open(t *testing.T, name, uri string) io.Closer {
	t.Helper()
	info, err := target.Lookup(name)
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

// steps plans the workload's SET and GET steps on target name.
func steps(t *testing.T, name string, requests, pipeline, keyspace int, client string) []workload.Step {
	return stepsOf(t, name, requests, pipeline, 10, keyspace, client)
}

func stepsOf(t *testing.T, name string, requests, pipeline, valueSize, keyspace int, client string) []workload.Step {
	return worktest.Plan(t, setget.SetGet{}, fmt.Sprintf(`
name: t
targets: [%s]
concurrency: 4
ladder: [1]
workloads:
  - name: setget
    params:
      requests: %d
      pipeline: %d
      value_size: %d
      keyspace: %d
      client: %s
`, name, requests, pipeline, valueSize, keyspace, client))
}

// histCount is how many operations the step's merged histogram holds.
func histCount(t *testing.T, res *results.Step) int64 {
	t.Helper()
	h, err := latency.Decode(res.Hist)
	if err != nil {
		t.Fatal(err)
	}
	return h.TotalCount()
}

// On Redis and memcached the pipelines run on the event loop (client
// events), every GET's value checked: as many checked as requests, as
// many operations in the histogram as pipelines, the same accounting as
// the goroutine client.
func TestEventLoopPipelinesAreCheckedAndTimed(t *testing.T) {
	for _, name := range []string{"redis", "memcached"} {
		h := open(t, name, uriOf(t, name))
		env := &workload.Env{Target: h}
		for _, p := range []int{1, 16} {
			for _, client := range []string{"events", "goroutines"} {
				const requests = 4000
				for _, st := range steps(t, name, requests, p, 500, client) {
					res, err := setget.SetGet{}.Execute(context.Background(), env, st)
					if err != nil {
						t.Fatalf("%s -P %d %s %s: %v", name, p, client, st.Phase, err)
					}
					loops, reqs := res.Metrics["event_loops"], res.Metrics["requests"]
					t.Logf("%s -P %d %s %s: %d pipelines, %v requests, %d checked, %v loops", name, p, client, st.Phase, res.Ops, reqs, res.Verify.Checked, loops)
					if res.Ops != requests/int64(p) || reqs != requests || histCount(t, res) != res.Ops {
						t.Errorf("%s -P %d %s %s: %d pipelines, %v requests, %d in the histogram", name, p, client, st.Phase, res.Ops, reqs, histCount(t, res))
					}
					if want := int64(requests); st.Phase == "get" && res.Verify.Checked != want {
						t.Errorf("%s -P %d %s: %d GETs checked, want %d", name, p, client, res.Verify.Checked, want)
					}
					if (client == "events") != (loops >= 1) {
						t.Errorf("%s -P %d %s: event_loops %v", name, p, client, loops)
					}
				}
			}
		}
	}
}

// Values larger than a read (300 kB, a pipeline of 4 of them) reach the
// event loop's sessions in many pieces: each reply is taken only once it
// is whole, every value checked.
func TestEventLoopLargeValues(t *testing.T) {
	for _, name := range []string{"redis", "memcached"} {
		h := open(t, name, uriOf(t, name))
		env := &workload.Env{Target: h}
		for _, st := range stepsOf(t, name, 80, 4, 300000, 20, "events") {
			res, err := setget.SetGet{}.Execute(context.Background(), env, st)
			if err != nil {
				t.Fatalf("%s %s: %v", name, st.Phase, err)
			}
			if res.Ops != 20 || histCount(t, res) != 20 || res.Metrics["event_loops"] < 1 || (st.Phase == "get" && res.Verify.Checked != 80) {
				t.Errorf("%s %s: %d pipelines, %d in the histogram, %d checked, %v loops", name, st.Phase, res.Ops, histCount(t, res), res.Verify.Checked, res.Metrics["event_loops"])
			}
		}
	}
}

// A GET that returns another value than the one set fails the run on
// the event loop, naming the key: another client overwrites it between
// the SET and GET phases.
func TestEventLoopWrongValueFails(t *testing.T) {
	for _, name := range []string{"redis", "memcached"} {
		for _, p := range []int{1, 16} {
			h := open(t, name, uriOf(t, name))
			env := &workload.Env{Target: h}
			// No keyspace: every request is on key:0.
			st := steps(t, name, 320, p, 0, "events")
			if _, err := (setget.SetGet{}).Execute(context.Background(), env, st[0]); err != nil {
				t.Fatalf("%s set: %v", name, err)
			}
			other, err := h.(setget.Pipeliner).NewSession(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := other.Set([][]byte{[]byte("key:0")}, [][]byte{[]byte("not the value")}); err != nil {
				t.Fatal(err)
			}
			other.Close()
			res, err := setget.SetGet{}.Execute(context.Background(), env, st[1])
			var ve *workload.VerifyError
			if !errors.As(err, &ve) || string(ve.Key) != "key:0" || !strings.Contains(err.Error(), "key "+hex.EncodeToString([]byte("key:0"))) {
				t.Fatalf("%s -P %d: want a verify error naming key:0, got %v", name, p, err)
			}
			if res == nil || res.Metrics["event_loops"] < 1 {
				t.Fatalf("%s -P %d: not on the event loop (%v)", name, p, res)
			}
			t.Logf("%s -P %d: %v", name, p, err)
		}
	}
}

// runUntilGone starts a long SET phase on the event loop, makes the
// server go away from its connections after a while (gone), and checks
// the run fails within seconds with an error naming a connection, after
// gone made it so (gone says how it went; the test waits for it, so
// nothing of it outlives the test, and a gone that could not close the
// connections stops the run instead of leaving it to its 1e9 requests).
func runUntilGone(t *testing.T, name string, h io.Closer, gone func() error) {
	t.Helper()
	env := &workload.Env{Target: h}
	st := steps(t, name, 1e9, 16, 1000, "events")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var goneAt atomic.Int64
	done := make(chan error, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		err := gone()
		goneAt.Store(time.Now().UnixNano())
		if err != nil {
			cancel()
		}
		done <- err
	}()
	t0 := time.Now()
	_, err := setget.SetGet{}.Execute(ctx, env, st[0])
	ended := time.Now()
	took := ended.Sub(t0)
	if gerr := <-done; gerr != nil {
		t.Fatalf("%s: %v (the run: %v after %v)", name, gerr, err, took)
	}
	if at := goneAt.Load(); err != nil && ended.UnixNano() < at && !strings.Contains(err.Error(), "connection") {
		t.Fatalf("%s: the run failed before its connections were closed: %v after %v", name, err, took)
	}
	if err == nil || !strings.Contains(err.Error(), name+" connection") || took > 10*time.Second {
		t.Fatalf("%s after its connections were closed: %v after %v", name, err, took)
	}
	t.Logf("%s: %v after %v", name, err, took.Round(time.Millisecond))
}

// Redis closing the load's connections mid-run (CLIENT KILL) fails the
// run within seconds, naming the connection, never a hang.
func TestEventLoopRedisKilledConnectionFails(t *testing.T) {
	uri := uriOf(t, "redis")
	h := open(t, "redis", uri)
	opt, err := goredis.ParseURL(uri)
	if err != nil {
		t.Fatal(err)
	}
	opt.DB = 0 // the admin connection is not one of the killed
	admin := goredis.NewClient(opt)
	defer admin.Close()
	// The load's connections (database redisDB), once they are there:
	// on a loaded machine the step may take longer than the first wait
	// to connect.
	runUntilGone(t, "redis", h, func() error {
		ctx := context.Background()
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := admin.ClientList(ctx).Result()
			if err != nil {
				return fmt.Errorf("CLIENT LIST: %w", err)
			}
			killed := 0
			for _, line := range strings.Split(list, "\n") {
				if !strings.Contains(line, fmt.Sprintf(" db=%d ", redisDB)) {
					continue
				}
				for _, f := range strings.Fields(line) {
					if id, ok := strings.CutPrefix(f, "id="); ok {
						if err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err == nil {
							killed++
						}
					}
				}
			}
			if killed > 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no client of database %d to kill in 10 s", redisDB)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// memcached has no command that closes another client: a proxy in front
// of it hangs up on the load's connections mid-run, which must fail the
// run within seconds, naming the connection.
func TestEventLoopMemcachedHangUpFails(t *testing.T) {
	uri := uriOf(t, "memcached")
	upstream := strings.TrimPrefix(uri, "memcached://")
	upstream, _, _ = strings.Cut(upstream, "/")
	p := newProxy(t, upstream)
	h := open(t, "memcached", "memcached://"+p.addr())
	runUntilGone(t, "memcached", h, func() error { p.hangUp(); return nil })
}

// proxy forwards TCP connections to upstream until hangUp closes them.
type proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, upstream string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	t.Cleanup(func() { l.Close(); p.hangUp() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, bufio.NewReader(c)); u.Close() }()
			go func() { io.Copy(c, bufio.NewReader(u)); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) hangUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
