// The target against a real asd (the managed server built from the
// vendored source: servertest starts a private one unless make test
// shares its own), plus the key and bin mapping (pure functions; the
// ledger's are in workload/ledger's layout_aerospike_test.go) and a
// clear, prompt error from Open when no server answers.
package aerospike_test

import (
	"bytes"
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/aerospike"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/aerospike"
	"storebench/internal/target/conn"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "aerospike", "aerospike", "aerospike")
	servers.ModuleVersion(t, "github.com/aerospike/aerospike-client-go/v8", "v8.5.0")
}

// One server serves every subtest: a private one, since the workloads'
// tests use the same sets of make test's shared server (the namespace is
// the server's, a test cannot pick another as Redis's use database 9).
func TestWithServer(t *testing.T) {
	uri := servertest.Start(t, "aerospike", kv.Sync).URI
	open := func(t *testing.T, d kv.Durability) any {
		h := servers.Open(t, "aerospike", target.Options{URI: uri, Durability: d, Extra: map[string]string{"pool": "8"}})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The ledger and YCSB layouts on it: workload/ledger and
	// workload/ycsb TestLayoutOnServerTargets.
	// A sync study is not refused (no Community Edition setting fsyncs
	// each write) but told as what it is.
	t.Run("SyncIsToldAsAsync", func(t *testing.T) {
		d := servers.Settings(t, open(t, kv.Sync))["durability"]
		if !strings.HasPrefix(d, "async") || !strings.Contains(d, "commit-to-device false") || !strings.Contains(d, "the study asked for sync") {
			t.Errorf("durability %q", d)
		}
	})
	t.Run("UnknownNamespace", func(t *testing.T) {
		err := servers.OpenFails(t, "aerospike", strings.TrimSuffix(uri, "/storebench")+"/nosuch")
		if !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("error does not name the namespace: %v", err)
		}
	})
}

// The client connects in NewClient: a closed port fails Open promptly,
// naming the target and the redacted URI.
func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "aerospike", "aerospike://bench:%s@127.0.0.1:%d/test")
}

func TestBadURI(t *testing.T) {
	err := servers.OpenFails(t, "aerospike", "aerospike://bench:"+servers.TestPassword+"@127.0.0.1:3000/a/b")
	if !strings.Contains(err.Error(), "namespace") {
		t.Errorf("error does not say what is wrong: %v", err)
	}
}

func TestFieldBins(t *testing.T) {
	names := aerospike.FieldNames(4)
	if strings.Join(names, ",") != "field0,field1,field2,field3" {
		t.Fatalf("names %v", names)
	}
	fields := [][]byte{[]byte("a"), []byte("bb"), []byte("ccc"), []byte("dddd")}
	bins, err := aerospike.FieldBins(names, fields)
	if err != nil || len(bins) != 4 {
		t.Fatalf("FieldBins: %d bins, %v", len(bins), err)
	}
	got, err := aerospike.FieldsFromBins(names, conn.AerospikeReadBack(bins, false))
	if err != nil {
		t.Fatal(err)
	}
	for i := range fields {
		if !bytes.Equal(got[i], fields[i]) {
			t.Errorf("field %d: %q, want %q", i, got[i], fields[i])
		}
	}
	// A partial update writes only the non-nil fields.
	bins, _ = aerospike.FieldBins(names, [][]byte{nil, []byte("new"), nil, nil})
	if len(bins) != 1 || bins[0].Name != "field1" {
		t.Errorf("partial update bins %v", bins)
	}
	if _, err := aerospike.FieldBins(names, make([][]byte, 5)); err == nil {
		t.Error("FieldBins accepted more fields than the table has")
	}
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "aerospike", "aerospike://bench:%s@127.0.0.1:%d/test")
}
