// The target against a real asd, only one named by
// STOREBENCH_TEST_AEROSPIKE_URI (aerospike://host:port/namespace): no
// package ships Aerospike's server and storebench no longer starts one,
// so without the variable the server's tests skip, saying so. Without a
// server: its registration as a target by URI only and a clear, prompt
// error from Open when no server answers (the layouts' key and bin
// mappings are tested in their workloads: layout_aerospike_test.go of
// workload/ledger and workload/ycsb).
package aerospike_test

import (
	"net/url"
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

// A target by URI only: no managed server, and the error for a study
// that names it without one says the URI to give.
func TestInfo(t *testing.T) {
	servers.Info(t, "aerospike", "", "aerospike")
	servers.ModuleVersion(t, "github.com/aerospike/aerospike-client-go/v8", "v8.5.0")
	info, err := target.Lookup("aerospike")
	if err != nil {
		t.Fatal(err)
	}
	if !info.ByURIOnly() || info.URIExample() != "aerospike://host:port/namespace" || info.WhyNoServer() != "no package ships its server" {
		t.Errorf("not a target by URI only: %+v", info)
	}
	if msg := info.NeedsURI().Error(); !strings.Contains(msg, "aerospike://host:port/namespace") || !strings.Contains(msg, "no package ships its server") {
		t.Errorf("error without a URI: %s", msg)
	}
	// Open without a URI says the same form.
	if _, err := info.Open(target.Options{Durability: kv.Async}); err == nil || !strings.Contains(err.Error(), "aerospike://host:port/namespace") {
		t.Errorf("Open without a URI: %v", err)
	}
}

// Every subtest on the server STOREBENCH_TEST_AEROSPIKE_URI names (the
// test is skipped without one, saying so).
func TestWithServer(t *testing.T) {
	uri := servertest.ByURI(t, "aerospike", "aerospike://host:port/namespace")
	open := func(t *testing.T, d kv.Durability) any {
		h := servers.Open(t, "aerospike", target.Options{URI: uri, Durability: d, Extra: map[string]string{"pool": "8"}})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The ledger and YCSB layouts on it: workload/ledger and
	// workload/ycsb TestLayoutOnServerTargets.
	// A sync study is not refused (no Community Edition setting fsyncs
	// each write) but told as what it is: async unless the namespace is
	// strong-consistency with commit-to-device (Enterprise).
	t.Run("SyncIsToldAsWhatItIs", func(t *testing.T) {
		d := servers.Settings(t, open(t, kv.Sync))["durability"]
		fsyncs := strings.HasPrefix(d, "fsync per write") && strings.Contains(d, "commit-to-device true")
		async := strings.HasPrefix(d, "async") && strings.Contains(d, "commit-to-device false") && strings.Contains(d, "the study asked for sync")
		if !fsyncs && !async {
			t.Errorf("durability %q", d)
		}
	})
	t.Run("UnknownNamespace", func(t *testing.T) {
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/nosuch"
		err = servers.OpenFails(t, "aerospike", u.String())
		if !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("error does not name the namespace: %v", err)
		}
	})
}

func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "aerospike", "aerospike://bench:%s@127.0.0.1:%d/test")
}

func TestBadURI(t *testing.T) {
	err := servers.OpenFails(t, "aerospike", "aerospike://bench:"+servers.TestPassword+"@127.0.0.1:3000/a/b")
	if !strings.Contains(err.Error(), "namespace") {
		t.Errorf("error does not say what is wrong: %v", err)
	}
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "aerospike", "aerospike://bench:%s@127.0.0.1:%d/test")
}
