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
// check against it, stopping it last.
func TestCassandra(t *testing.T) {
	t0 := time.Now()
	inst := servertest.Start(t, "cassandra", kv.Sync)
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
