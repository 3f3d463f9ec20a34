package tripcache

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/ycsb"
)

// killingDB is a Redis cache whose server closes every client connection
// (CLIENT KILL TYPE normal, as another package's test did on the server
// make test shares) at the verifier's first read: the verifier's reads
// take the step's context, which cannot be cancelled here, the
// processing goroutines' a cancellable one, and the probe is trip:probe.
type killingDB struct {
	ycsb.DB
	io.Closer
	kill   func()
	once   sync.Once
	killed atomic.Bool
}

func (d *killingDB) Read(ctx context.Context, key []byte) ([][]byte, error) {
	if ctx.Done() == nil && string(key) != "trip:probe" {
		d.once.Do(func() { d.kill(); d.killed.Store(true) })
	}
	return d.DB.Read(ctx, key)
}

// The Redis cache's verification outlives its server closing every
// client connection: the pool drops the dead ones and the reads go on,
// on fresh ones. make test once failed TestRedisCache with "tripcache:
// verify trip 403: EOF": ycsb's TestEventLoopKilledConnection ran CLIENT
// KILL TYPE normal on the shared Redis during the verification, and the
// target's go-redis pool, blind to closed connections (the cancel
// watch's wrapper hid their sockets from its liveness check), handed
// each dead one a read that ended in EOF, more of them than its retries.
func TestRedisCacheOutlivesKilledConnections(t *testing.T) {
	// A server of its own: the kill reaches every client of a server.
	inst := servertest.Start(t, "redis", kv.Async)
	info, err := target.Lookup("redis")
	if err != nil {
		t.Fatal(err)
	}
	h, err := info.Open(target.Options{URI: inst.URI, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rc := h.(conn.RESP).RESPClient()
	db := &killingDB{DB: h.(ycsb.DB), Closer: h, kill: func() { killClients(t, inst.URI, rc, 8) }}
	steps := worktest.Plan(t, TripCache{}, smallStudy)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: db}, steps[0])
	if !db.killed.Load() {
		t.Fatalf("the connections were never killed (the verifier's reads no longer take the step's context?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 6000 || res.Verify.Checked < 300 {
		t.Fatalf("processed %d ticks, verified %d trips", res.Ops, res.Verify.Checked)
	}
}

// killClients fills the pool of rc with n idle connections (n commands
// at once, each holding its connection a second), has the server close
// every client connection but the killer's, and waits until it has.
func killClients(t *testing.T, uri string, rc *goredis.Client, n int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rc.BLPop(ctx, time.Second, "storebench:nothing").Err(); err != goredis.Nil {
				t.Errorf("BLPOP: %v", err)
			}
		}()
	}
	wg.Wait()
	opt, err := goredis.ParseURL(uri)
	if err != nil {
		t.Error(err)
		return
	}
	killer := goredis.NewClient(opt)
	defer killer.Close()
	if killed, err := killer.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Int(); err != nil || killed < n {
		t.Errorf("CLIENT KILL: %d killed, %v", killed, err)
		return
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		list, err := killer.ClientList(ctx).Result()
		if err != nil {
			t.Error(err)
			return
		}
		if !strings.Contains(strings.TrimSpace(list), "\n") {
			return // only the killer's own connection is left
		}
		if time.Now().After(deadline) {
			t.Errorf("the killed connections are still listed:\n%s", list)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
