package redis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/target/servers"
)

// killIdle fills the pool of rc with n idle connections (n commands at
// once, each holding its connection 100 ms), then has the server close
// every one of them from a client of its own (CLIENT KILL TYPE normal),
// and waits until the server has let them go. The server must be the
// test's own: the kill reaches every client of the server.
func killIdle(t *testing.T, uri string, rc *goredis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rc.BLPop(ctx, 100*time.Millisecond, "storebench:nothing").Err(); err != goredis.Nil {
				t.Errorf("BLPOP: %v", err)
			}
		}()
	}
	wg.Wait()
	if idle := rc.PoolStats().IdleConns; idle < uint32(n) {
		t.Fatalf("%d idle connections in the pool, want %d", idle, n)
	}
	opt, err := goredis.ParseURL(uri)
	if err != nil {
		t.Fatal(err)
	}
	killer := goredis.NewClient(opt)
	defer killer.Close()
	killed, err := killer.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Int()
	if err != nil || killed < n {
		t.Fatalf("CLIENT KILL: %d killed, %v", killed, err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		list, err := killer.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(strings.TrimSpace(list), "\n") == 0 {
			break // only the killer's own connection is left
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed connections are still listed:\n%s", list)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A pooled connection the server closed while it sat idle (CLIENT KILL,
// a restart, an idle timeout) is dropped when the pool hands it out, and
// the command goes to a fresh connection. The target dials through
// targetkit.ConnWatch, whose wrapper hid the socket from go-redis's
// liveness check (it looks for syscall.Conn): each dead connection then
// took a command, which read EOF, and with more of them than go-redis's
// 3 retries the command failed with EOF. make test saw it as
// tripcache's TestRedisCache failing with "verify trip 403: EOF" while
// ycsb's TestEventLoopKilledConnection ran CLIENT KILL TYPE normal on the
// shared server.
func TestKilledIdleConnectionsAreNotUsed(t *testing.T) {
	// A server of its own: CLIENT KILL would reach other packages' clients.
	inst := servertest.Start(t, "redis", kv.Async)
	h := servers.Open(t, "redis", target.Options{URI: inst.URI, Durability: kv.Async, Extra: map[string]string{"pool": "8"}})
	defer h.Close()
	rc := h.(conn.RESP).RESPClient()
	ctx := context.Background()
	killIdle(t, inst.URI, rc, 8)
	stale0 := rc.PoolStats().StaleConns
	for i := range 20 {
		if err := rc.Set(ctx, "storebench:stale", i, 0).Err(); err != nil {
			t.Fatalf("command %d after the pool's connections were killed: %v", i, err)
		}
	}
	// The pool's liveness check dropped them (3 per connection it hands
	// out, then it dials; the rest go as they come up).
	if rc.PoolStats().StaleConns == stale0 {
		t.Error("the pool found none of the killed connections stale")
	}
	// The YCSB layout (tripcache's cache) the same.
	db := h.(interface {
		Init(context.Context, int) error
		Insert(context.Context, []byte, [][]byte) error
		Read(context.Context, []byte) ([][]byte, error)
	})
	if err := db.Init(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := db.Insert(ctx, []byte("k"), [][]byte{[]byte("v")}); err != nil {
		t.Fatal(err)
	}
	killIdle(t, inst.URI, rc, 8)
	if f, err := db.Read(ctx, []byte("k")); err != nil || len(f) != 1 || string(f[0]) != "v" {
		t.Fatalf("read after the pool's connections were killed: %q, %v", f, err)
	}
}

// The end of Open's own context (Open cancels it as it returns) interrupts
// no later command. Open's commands registered it with the ConnWatch, and
// its end set a deadline in the past on every connection, from a goroutine
// that runs when the scheduler gets to it: often after the next command
// had set its own deadline, which then failed with "i/o timeout" (here, a
// BLPOP of a second on Open's connection, every time).
func TestOpensContextInterruptsNoLaterCommand(t *testing.T) {
	uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/9"
	key := fmt.Sprintf("storebench:nothing:%d", os.Getpid())
	for i := range 3 {
		h := servers.Open(t, "redis", target.Options{URI: uri, Durability: kv.Async})
		rc := h.(conn.RESP).RESPClient()
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() { errs <- rc.BLPop(context.Background(), time.Second, key).Err() }()
		}
		for range cap(errs) {
			if err := <-errs; err != goredis.Nil {
				t.Errorf("open %d: BLPOP of a key nobody pushes: %v, want redis.Nil after a second", i, err)
			}
		}
		h.Close()
	}
}
