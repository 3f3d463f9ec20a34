// No Aerospike server can be installed on this machine (Aerospike is not
// packaged for Debian and nothing but the package registries is
// reachable), so these tests cover what runs without one: the key and bin
// mapping (pure functions) and a clear, prompt error from Open when no
// server answers. The ledger and YCSB operations have not run against a
// real server here.
package aerospike_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/target/aerospike"
	"storebench/internal/target/servers"
	"storebench/internal/workload/ledger"
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

func addr(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestKeys(t *testing.T) {
	a, b := addr(1), addr(2)
	k1, err := aerospike.TxKey("test", a)
	if err != nil {
		t.Fatal(err)
	}
	k1again, _ := aerospike.TxKey("test", append([]byte(nil), a...))
	k2, _ := aerospike.TxKey("test", b)
	bal, _ := aerospike.BalanceKey("test", a)
	other, _ := aerospike.TxKey("other", a)
	if !bytes.Equal(k1.Digest(), k1again.Digest()) {
		t.Error("the same address gives two digests")
	}
	if bytes.Equal(k1.Digest(), k2.Digest()) || bytes.Equal(k1.Digest(), bal.Digest()) {
		t.Error("distinct records share a digest")
	}
	if k1.Namespace() != "test" || k1.SetName() != "txs" || bal.SetName() != "balances" || other.Namespace() != "other" {
		t.Errorf("keys in %s/%s, %s/%s", k1.Namespace(), k1.SetName(), bal.Namespace(), bal.SetName())
	}
	if v, ok := k1.Value().GetObject().([]byte); !ok || !bytes.Equal(v, a) {
		t.Errorf("transaction key value %v, want the address bytes", k1.Value())
	}

	// Chain entries: genesis, '|', the index in 8 big-endian bytes.
	v := aerospike.ChainKeyValue(a, 258)
	if len(v) != 41 || !bytes.Equal(v[:32], a) || v[32] != '|' || binary.BigEndian.Uint64(v[33:]) != 258 {
		t.Errorf("chain key value %x", v)
	}
	seen := map[string]bool{}
	for _, g := range [][]byte{a, b} {
		for i := uint64(0); i < 300; i++ {
			k, err := aerospike.ChainKey("test", g, i)
			if err != nil {
				t.Fatal(err)
			}
			if k.SetName() != "chain" {
				t.Fatalf("chain key in set %s", k.SetName())
			}
			d := string(k.Digest())
			if seen[d] {
				t.Fatalf("chain entry %x/%d shares a digest", g[:2], i)
			}
			seen[d] = true
		}
	}
}

// asServerReturns turns the bins a write sends into the map a read gives
// back: blobs as fresh []byte, integers as int (the client's 64-bit
// decoding), and an empty blob possibly absent.
func asServerReturns(bins []*as.Bin, dropEmpty bool) as.BinMap {
	m := as.BinMap{}
	for _, b := range bins {
		switch v := b.Value.GetObject().(type) {
		case []byte:
			if len(v) == 0 && dropEmpty {
				continue
			}
			m[b.Name] = append([]byte{}, v...)
		case int:
			m[b.Name] = v
		case int64:
			m[b.Name] = int(v)
		default:
			m[b.Name] = v
		}
	}
	return m
}

func TestTxBinsRoundTrip(t *testing.T) {
	txs := []ledger.Tx{
		{Address: addr(1), Prev: make([]byte, 32), Genesis: addr(1), Index: 0, Timestamp: 1_600_000_000_000, Type: 0, Payload: []byte("genesis payload")},
		{Address: addr(2), Prev: addr(1), Genesis: addr(1), Index: 1<<63 - 1, Timestamp: -5, Type: 255, Payload: nil},
		{Address: addr(3), Prev: addr(2), Genesis: addr(1), Index: 2, Timestamp: 1 << 62, Type: 7, Payload: bytes.Repeat([]byte{0, 0xff}, 4096)},
	}
	for _, tx := range txs {
		bins := aerospike.TxBins(tx)
		for _, b := range bins {
			if len(b.Name) > 15 {
				t.Errorf("bin name %q is longer than Aerospike's 15 bytes", b.Name)
			}
		}
		for _, dropEmpty := range []bool{false, true} {
			got, err := aerospike.TxFromBins(tx.Address, asServerReturns(bins, dropEmpty))
			if err != nil {
				t.Fatalf("TxFromBins: %v", err)
			}
			if !bytes.Equal(ledger.Encode(nil, got), ledger.Encode(nil, tx)) {
				t.Errorf("round trip of tx %d changed it: %+v", tx.Index, got)
			}
		}
	}
	if _, err := aerospike.TxFromBins(addr(1), as.BinMap{"prev": addr(0)}); err == nil {
		t.Error("TxFromBins accepted a record without its bins")
	}
	if _, err := aerospike.TxFromBins(addr(1), as.BinMap{"prev": addr(0), "genesis": addr(1), "idx": "x", "ts": 1, "type": 1}); err == nil {
		t.Error("TxFromBins accepted a string index")
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
	got, err := aerospike.FieldsFromBins(names, asServerReturns(bins, false))
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
