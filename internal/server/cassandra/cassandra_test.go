package cassandra_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
	"storebench/internal/server"
	_ "storebench/internal/server/cassandra"
	"storebench/internal/server/proc"
	"storebench/internal/server/servertest"
)

// TestCassandra starts one node (start-up takes ~10 s) and runs every
// check against it, stopping it last. It is given a cache budget (a study
// target's cache:), which must size the heap and the key cache.
func TestCassandra(t *testing.T) {
	t0 := time.Now()
	inst := servertest.StartConfig(t, "cassandra", server.Config{Durability: kv.Sync, MemoryBytes: 640 << 20})
	t.Logf("started in %v: %s pid %d version %s data %s", time.Since(t0).Round(time.Millisecond), inst.URI, inst.PID, inst.Version, inst.DataDir)
	if rss, err := rssMiB(inst.PID); err == nil {
		t.Logf("RSS after start: %d MiB", rss)
	}

	t.Run("Instance", func(t *testing.T) {
		for k, v := range inst.Settings {
			t.Logf("  %s: %s", k, v)
		}
		if !strings.Contains(inst.Settings["durability"], "commitlog_sync: batch") {
			t.Errorf("durability setting %q does not say commitlog_sync: batch", inst.Settings["durability"])
		}
		if !strings.HasPrefix(inst.Version, "4.1.") {
			t.Errorf("version %q, want 4.1.x", inst.Version)
		}
		u, err := url.Parse(inst.URI)
		if err != nil || u.Scheme != "cassandra" || u.Hostname() != "127.0.0.1" || u.Path != "/storebench" {
			t.Errorf("URI %q: want cassandra://127.0.0.1:PORT/storebench (%v)", inst.URI, err)
		}
		if _, err := os.Stat(filepath.Join(inst.DataDir, "commitlog")); err != nil {
			t.Errorf("no commit log under the data dir: %v", err)
		}
		yaml, err := os.ReadFile(filepath.Join(filepath.Dir(inst.DataDir), "cassandra.yaml"))
		if err != nil || !strings.Contains(string(yaml), "\ncommitlog_sync: batch\n") {
			t.Errorf("cassandra.yaml does not set commitlog_sync: batch (%v)", err)
		}
		// Cassandra logs the configuration it runs with.
		log, err := os.ReadFile(inst.LogPath)
		if err != nil || !strings.Contains(string(log), "; commitlog_sync=batch;") {
			t.Errorf("log %s does not show commitlog_sync=batch in the node configuration (%v)", inst.LogPath, err)
		}
	})

	t.Run("CacheSizesHeapAndKeyCache", func(t *testing.T) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", inst.PID))
		if err != nil || !strings.Contains(string(cmdline), "\x00-Xmx640m\x00") {
			t.Errorf("JVM command line lacks -Xmx640m (%v)", err)
		}
		s := connect(t, inst.URI)
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for name, want := range map[string]string{"key_cache_size": "32MiB", "row_cache_size": "0MiB"} {
			var got string
			if err := s.Query(`SELECT value FROM system_views.settings WHERE name = ?`, name).ScanContext(ctx, &got); err != nil || got != want {
				t.Errorf("%s = %q, %v; want %s", name, got, err, want)
			}
		}
		if h := inst.Settings["heap"]; !strings.HasPrefix(h, "640 MiB (-Xms = -Xmx, the target's cache)") {
			t.Errorf("heap setting %q", h)
		}
		if c := inst.Settings["caches"]; !strings.HasPrefix(c, "key_cache_size 32 MiB") {
			t.Errorf("caches setting %q", c)
		}
	})

	t.Run("PreparedStatements", func(t *testing.T) {
		s := connect(t, inst.URI)
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Query(`CREATE TABLE IF NOT EXISTS kv (k text PRIMARY KEY, v blob)`).ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
		// Bound values make the driver PREPARE: without the jamm agent
		// Cassandra 4.1 on Java 17 fails every PREPARE.
		for i := 0; i < 10; i++ {
			if err := s.Query(`INSERT INTO kv (k, v) VALUES (?, ?)`, fmt.Sprintf("key%d", i), []byte(fmt.Sprintf("value%d", i))).ExecContext(ctx); err != nil {
				t.Fatalf("prepared insert: %v", err)
			}
		}
		var v []byte
		if err := s.Query(`SELECT v FROM kv WHERE k = ?`, "key7").ScanContext(ctx, &v); err != nil {
			t.Fatalf("prepared select: %v", err)
		}
		if string(v) != "value7" {
			t.Fatalf("read %q, want value7", v)
		}
		if err := s.Query(`SELECT v FROM kv WHERE k = ?`, "absent").ScanContext(ctx, &v); err != gocql.ErrNotFound {
			t.Fatalf("absent key: %v, want not found", err)
		}
	})

	t.Run("Stop", func(t *testing.T) {
		if rss, err := rssMiB(inst.PID); err == nil {
			t.Logf("RSS before stop: %d MiB", rss)
		}
		ctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
		defer cancel()
		t1 := time.Now()
		if err := inst.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("stopped in %v", time.Since(t1).Round(time.Millisecond))
		if proc.Alive(inst.PID) {
			t.Fatalf("pid %d still alive after Stop", inst.PID)
		}
	})
}

func connect(t *testing.T, uri string) *gocql.Session {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	c := gocql.NewCluster(u.Hostname())
	c.Port = port
	c.Keyspace = strings.TrimPrefix(u.Path, "/")
	c.Consistency = gocql.One
	c.Timeout = 10 * time.Second
	s, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rssMiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kib int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kib); err == nil {
			return kib >> 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
