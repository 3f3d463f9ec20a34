package targetkit

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"storebench/internal/kv"
)

// recorder is a native batch (Writer) and a transaction (Apply's put and
// del) that writes down what it is given.
type recorder struct{ got []string }

func (r *recorder) Put(k, v []byte) { r.got = append(r.got, "put "+string(k)+"="+string(v)) }
func (r *recorder) Delete(k []byte) { r.got = append(r.got, "del "+string(k)) }

func TestOpsFillApplyCommitted(t *testing.T) {
	var o Ops
	o.Put([]byte("a"), []byte("1"))
	o.Delete([]byte("b"))
	o.Put([]byte("c"), nil)
	want := "put a=1,del b,put c="
	var r recorder
	o.Fill(&r)
	if got := strings.Join(r.got, ","); got != want {
		t.Errorf("Fill: %s, want %s", got, want)
	}
	var tx recorder
	err := o.Apply(func(k, v []byte) error { tx.Put(k, v); return nil }, func(k []byte) error { tx.Delete(k); return nil })
	if got := strings.Join(tx.got, ","); err != nil || got != want {
		t.Errorf("Apply: %s, %v; want %s", got, err, want)
	}
	boom := errors.New("boom")
	n := 0
	if err := o.Apply(func(k, v []byte) error { n++; return nil }, func(k []byte) error { return boom }); err != boom || n != 1 {
		t.Errorf("Apply stopping at an error: %v after %d puts", err, n)
	}
	if err := o.Committed("x", nil); err != nil {
		t.Errorf("Committed(nil) = %v", err)
	}
	if err := o.Committed("x", boom); !errors.Is(err, boom) || err.Error() != "x: commit batch of 3: boom" {
		t.Errorf("Committed = %v", err)
	}
}

func TestWrapAndOpen(t *testing.T) {
	boom := errors.New("boom")
	if Wrap("x: put", nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if err := Wrap("x: put", boom); !errors.Is(err, boom) || err.Error() != "x: put: boom" {
		t.Errorf("Wrap = %v", err)
	}
	s, err := Open("x", kv.Options{Dir: "/d"}, func(kv.Options) (kv.Store, error) { return nil, boom })
	if s != nil || !errors.Is(err, boom) || err.Error() != "x: open /d: boom" {
		t.Errorf("Open = %v, %v", s, err)
	}
}

func TestLSMOptions(t *testing.T) {
	dir := t.TempDir()
	o := kv.Options{Dir: dir, Durability: kv.Async, Extra: map[string]string{"memtable_bytes": "8MiB", "compression": "none"}}
	l, err := LSMOptions(o, []string{"bloom_bits_per_key", "memtable_bytes", "compression"}, "memtable_bytes", 4<<20, "snappy", "none")
	if err != nil {
		t.Fatal(err)
	}
	if l.Sync || l.BloomBits != 10 || l.Memtable != 8<<20 || l.Compression != "none" || l.BloomDesc() != "10 bits/key" {
		t.Errorf("LSMOptions = %+v", l)
	}
	if (LSM{}).BloomDesc() != "none" {
		t.Error("no filter is not none")
	}
	o.Extra = map[string]string{"compression": "zstd"}
	if _, err := LSMOptions(o, []string{"compression"}, "memtable_bytes", 4<<20, "snappy", "none"); err == nil {
		t.Error("a compression it lacks accepted")
	}
}

type closer struct{ n *int }

func (c *closer) Close() error { *c.n++; return errors.New("closed") }

func TestReleaseFirstErrorStage(t *testing.T) {
	n := 0
	c := &closer{&n}
	if err := Release(&c); err == nil || c != nil || n != 1 {
		t.Errorf("Release: %v, %v, %d closes", err, c, n)
	}
	if err := Release(&c); err != nil || n != 1 {
		t.Errorf("second Release: %v, %d closes", err, n)
	}
	a, b := errors.New("a"), errors.New("b")
	if FirstError(nil, a, b) != a || FirstError() != nil {
		t.Error("FirstError")
	}
	var mu sync.Mutex
	dirty := false
	if err := Stage(&mu, &dirty, "x: set", func() error { return a }); err == nil || err.Error() != "x: set: a" || dirty {
		t.Errorf("failed Stage: %v, dirty %v", err, dirty)
	}
	if err := Stage(&mu, &dirty, "x: set", func() error { return nil }); err != nil || !dirty {
		t.Errorf("Stage: %v, dirty %v", err, dirty)
	}
}

func TestParseURI(t *testing.T) {
	if u, err := ParseURI("kafka://h:1", "kafka://host:port"); err != nil || u.Host != "h:1" {
		t.Errorf("ParseURI = %v, %v", u, err)
	}
	if _, err := ParseURI("redis://h:1", "kafka://host:port"); err == nil || err.Error() != `scheme "redis": want kafka://host:port` {
		t.Errorf("wrong scheme: %v", err)
	}
	if _, err := ParseURI("memcached://%zz", "memcached://"); err == nil {
		t.Error("a bad URI parsed")
	}
}
