package targetkit

import (
	"strings"
	"testing"

	"storebench/internal/kv"
)

func TestParseAndFormatBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "64MiB": 64 << 20, "64 mb": 64 << 20, "1g": 1 << 30, "2KiB": 2048, "10b": 10,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "x", "1.5MiB", "99999999999G"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	for n, want := range map[int64]string{64 << 20: "64 MiB", 1 << 30: "1 GiB", 1536: "1536 B", 3 << 10: "3 KiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestOptions(t *testing.T) {
	if _, err := IsSync(""); err == nil {
		t.Error("empty durability accepted")
	}
	n, desc, err := CacheBytes(kv.Options{})
	if err != nil || n != DefaultCacheBytes || desc != "64 MiB (default)" {
		t.Errorf("CacheBytes(0) = %d, %q, %v", n, desc, err)
	}
	if _, err := CheckExtra(kv.Options{Extra: map[string]string{"a": "1", "zz": "2"}}, []string{"a"}); err == nil || !strings.Contains(err.Error(), "zz") {
		t.Errorf("CheckExtra: %v", err)
	}
	e := Extra{"size": "2MiB", "mode": "Fast"}
	if v, err := e.Bytes("size", 1); err != nil || v != 2<<20 {
		t.Errorf("Bytes: %d, %v", v, err)
	}
	if v, err := e.Choice("mode", "slow", "slow", "fast"); err != nil || v != "fast" {
		t.Errorf("Choice: %q, %v", v, err)
	}
	if _, err := e.Choice("mode", "slow", "slow"); err == nil {
		t.Error("Choice accepted a value outside the list")
	}
}

func TestUnavailableSaysWhatToDo(t *testing.T) {
	msg := Unavailable("rocksdb", "librocksdb-dev")
	for _, want := range []string{"librocksdb-dev", `"make build"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("Unavailable() = %q, missing %q", msg, want)
		}
	}
	if CgoEnabled && !strings.Contains(msg, `"rocksdb" build tag`) {
		t.Errorf("Unavailable() = %q does not name the build tag", msg)
	}
}

func TestOps(t *testing.T) {
	var o Ops
	k, v := []byte("k1"), []byte("v1")
	o.Put(k, v)
	k[0], v[0] = 'X', 'X' // the caller reuses its buffers
	o.Delete([]byte("k2"))
	o.Put([]byte("k3"), nil)
	if o.Len() != 3 {
		t.Fatalf("Len = %d", o.Len())
	}
	var got []string
	_ = o.Each(func(del bool, k, v []byte) error {
		if !del && v == nil {
			t.Errorf("put of %q has a nil value", k)
		}
		got = append(got, map[bool]string{true: "del ", false: "put "}[del]+string(k)+"="+string(v))
		return nil
	})
	if strings.Join(got, ",") != "put k1=v1,del k2=,put k3=" {
		t.Errorf("Each saw %q", got)
	}
}
