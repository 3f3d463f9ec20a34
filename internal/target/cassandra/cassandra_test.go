package cassandra_test

import (
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/cassandra"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "cassandra", "cassandra", "cassandra")
	servers.ModuleVersion(t, "github.com/apache/cassandra-gocql-driver/v2", "v2.1.2")
}

// One node serves every subtest: a JVM takes a while to start.
func TestWithServer(t *testing.T) {
	// A keyspace of its own on the shared node (Open creates it).
	uri := strings.TrimSuffix(servertest.URI(t, "cassandra"), "/storebench") + "/storebench_target_test"
	open := func(t *testing.T, d kv.Durability) any {
		h := servers.Open(t, "cassandra", target.Options{URI: uri, Durability: d})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The workloads' layouts are checked in their packages (ledger's and
	// ycsb's TestLayoutOnServerTargets).
	t.Run("Settings", func(t *testing.T) {
		h := open(t, kv.Sync)
		s := servers.Settings(t, h, "layout.ledger", "batch", "consistency")
		t.Logf("settings: %v", s)
		if !strings.Contains(s["batch"], "UNLOGGED") {
			t.Errorf("batch setting %q does not say which batch", s["batch"])
		}
	})
	t.Run("Keyspace", func(t *testing.T) {
		if ks := servers.Settings(t, open(t, kv.Async))["keyspace"]; ks != "storebench_target_test" {
			t.Errorf("keyspace %q, want the URI's", ks)
		}
	})
	t.Run("RefusedCredentials", func(t *testing.T) {
		// The node runs without authentication; credentials it cannot
		// check are accepted by the driver only if the server asks for
		// none, so only the password's absence from any error is checked.
		info, _ := target.Lookup("cassandra")
		h, err := info.Open(target.Options{URI: servers.WithCredentials(uri, "nobody"), Durability: kv.Sync})
		if err != nil {
			servers.OpenFails(t, "cassandra", servers.WithCredentials(uri, "nobody"))
			return
		}
		servers.Settings(t, h)
		h.Close()
	})
}

func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "cassandra", "cassandra://bench:%s@127.0.0.1:%d/storebench")
}

func TestBadKeyspace(t *testing.T) {
	err := servers.OpenFails(t, "cassandra", "cassandra://bench:"+servers.TestPassword+"@127.0.0.1:9042/no;drop")
	if !strings.Contains(err.Error(), "keyspace") {
		t.Errorf("error does not say what is wrong: %v", err)
	}
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "cassandra", "cassandra://bench:%s@127.0.0.1:%d/storebench")
}
