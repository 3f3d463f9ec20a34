package ledger

// The ledger layout on Aerospike (layout_aerospike.go): its key and bin
// mapping, pure functions, tested without a server (none can be
// installed on storebench's machines).

import (
	"bytes"
	"encoding/binary"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/target/conn"
)

func asAddr(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestAerospikeKeys(t *testing.T) {
	a, b := asAddr(1), asAddr(2)
	k1, err := asTxKey("test", a)
	if err != nil {
		t.Fatal(err)
	}
	k1again, _ := asTxKey("test", append([]byte(nil), a...))
	k2, _ := asTxKey("test", b)
	bal, _ := asBalanceKey("test", a)
	other, _ := asTxKey("other", a)
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
	v := asChainKeyValue(a, 258)
	if len(v) != 41 || !bytes.Equal(v[:32], a) || v[32] != '|' || binary.BigEndian.Uint64(v[33:]) != 258 {
		t.Errorf("chain key value %x", v)
	}
	seen := map[string]bool{}
	for _, g := range [][]byte{a, b} {
		for i := uint64(0); i < 300; i++ {
			k, err := asChainKey("test", g, i)
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

func TestAerospikeTxBinsRoundTrip(t *testing.T) {
	txs := []Tx{
		{Address: asAddr(1), Prev: make([]byte, 32), Genesis: asAddr(1), Index: 0, Timestamp: 1_600_000_000_000, Type: 0, Payload: []byte("genesis payload")},
		{Address: asAddr(2), Prev: asAddr(1), Genesis: asAddr(1), Index: 1<<63 - 1, Timestamp: -5, Type: 255, Payload: nil},
		{Address: asAddr(3), Prev: asAddr(2), Genesis: asAddr(1), Index: 2, Timestamp: 1 << 62, Type: 7, Payload: bytes.Repeat([]byte{0, 0xff}, 4096)},
	}
	for _, tx := range txs {
		bins := asTxBins(tx)
		for _, b := range bins {
			if len(b.Name) > 15 {
				t.Errorf("bin name %q is longer than Aerospike's 15 bytes", b.Name)
			}
		}
		for _, dropEmpty := range []bool{false, true} {
			got, err := asTxFromBins(tx.Address, conn.AerospikeReadBack(bins, dropEmpty))
			if err != nil {
				t.Fatalf("TxFromBins: %v", err)
			}
			if !bytes.Equal(Encode(nil, got), Encode(nil, tx)) {
				t.Errorf("round trip of tx %d changed it: %+v", tx.Index, got)
			}
		}
	}
	if _, err := asTxFromBins(asAddr(1), as.BinMap{"prev": asAddr(0)}); err == nil {
		t.Error("TxFromBins accepted a record without its bins")
	}
	if _, err := asTxFromBins(asAddr(1), as.BinMap{"prev": asAddr(0), "genesis": asAddr(1), "idx": "x", "ts": 1, "type": 1}); err == nil {
		t.Error("TxFromBins accepted a string index")
	}
}
