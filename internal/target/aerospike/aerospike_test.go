// No Aerospike server can be installed on this machine (Aerospike is not
// packaged for Debian and nothing but the package registries is
// reachable), so these tests cover what runs without one: the key and bin
// mapping (pure functions; the ledger's are in workload/ledger's
// layout_aerospike_test.go) and a clear, prompt error from Open when no
// server answers. The ledger and YCSB operations have not run against a
// real server here.
package aerospike_test

import (
	"bytes"
	"strings"
	"testing"

	"storebench/internal/target/aerospike"
	"storebench/internal/target/conn"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "aerospike", "", "aerospike")
	servers.ModuleVersion(t, "github.com/aerospike/aerospike-client-go/v8", "v8.5.0")
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
