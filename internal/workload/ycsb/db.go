// Package ycsb is the YCSB core workloads A–F: the lingua franca of
// key-value benchmarking, run on every target that offers DB (servers) or
// kv.Store (embedded engines, through KVDB).
package ycsb

import (
	"context"
	"encoding/binary"
	"fmt"

	"storebench/internal/kv"
)

// DB is what the YCSB workload needs. A record has fieldCount fields,
// named field0 … field<n-1> where the store has names.
type DB interface {
	// Init prepares an empty table for records of fieldCount fields,
	// dropping what a previous run left.
	Init(ctx context.Context, fieldCount int) error
	// Insert writes a new record.
	Insert(ctx context.Context, key []byte, fields [][]byte) error
	// Update writes the non-nil fields and leaves the others as they are.
	Update(ctx context.Context, key []byte, fields [][]byte) error
	// Read returns every field of the record, or an error wrapping
	// kv.ErrNotFound.
	Read(ctx context.Context, key []byte) ([][]byte, error)
}

// Attacher is optional: a DB that several worker processes can share
// attaches to the table another process's Init created, without emptying
// it (a step split across processes: see YCSB.Split).
type Attacher interface {
	Attach(ctx context.Context, fieldCount int) error
}

// Attach implements Attacher: an ordered store has no table to prepare.
func (d KVDB) Attach(context.Context, int) error { return nil }

// Scanner is optional: an ordered scan of count records from start
// (workload E). Targets without it cannot run workload E.
type Scanner interface {
	Scan(ctx context.Context, start []byte, count int, fn func(key []byte, fields [][]byte) bool) error
}

// KVDB runs YCSB on an ordered key-value store: a record is one value,
// its fields length-prefixed (uvarint) in order. Update reads, merges and
// writes the record, as YCSB's RocksDB binding does.
type KVDB struct{ KV kv.Store }

func (d KVDB) Init(context.Context, int) error { return nil }

func (d KVDB) Insert(_ context.Context, key []byte, fields [][]byte) error {
	return d.KV.Put(key, encodeFields(nil, fields))
}

func (d KVDB) Update(ctx context.Context, key []byte, fields [][]byte) error {
	old, err := d.Read(ctx, key)
	if err != nil {
		return err
	}
	for i, f := range fields {
		if f != nil && i < len(old) {
			old[i] = f
		}
	}
	return d.KV.Put(key, encodeFields(nil, old))
}

func (d KVDB) Read(_ context.Context, key []byte) ([][]byte, error) {
	v, err := d.KV.Get(key)
	if err != nil {
		return nil, err
	}
	return decodeFields(v)
}

func (d KVDB) Scan(_ context.Context, start []byte, count int, fn func([]byte, [][]byte) bool) error {
	n := 0
	var failure error
	err := d.KV.Scan(start, nil, func(k, v []byte) bool {
		f, err := decodeFields(v)
		if err != nil {
			failure = fmt.Errorf("record %q: %w", k, err)
			return false
		}
		n++
		return fn(append([]byte(nil), k...), f) && n < count
	})
	if err != nil {
		return err
	}
	return failure
}

func encodeFields(dst []byte, fields [][]byte) []byte {
	for _, f := range fields {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return dst
}

func decodeFields(v []byte) ([][]byte, error) {
	return decodeInto(nil, v)
}

// decodeInto decodes a record's fields into out (appended: no allocation
// once out has the room), aliasing v.
func decodeInto(out [][]byte, v []byte) ([][]byte, error) {
	for len(v) > 0 {
		n, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < n {
			return nil, fmt.Errorf("corrupt record encoding")
		}
		out = append(out, v[k:k+int(n)])
		v = v[k+int(n):]
	}
	return out, nil
}

// DurableReader is a DB whose reads can be made at a level that must see
// every acknowledged write (Cassandra: consistency ALL). After a phase
// with faults, every acknowledged write is read back this way.
type DurableReader interface {
	ReadDurable(ctx context.Context, key []byte) ([][]byte, error)
	// DurableRead names the level, for the report.
	DurableRead() string
}

// AsyncReplication is a DB whose replication is asynchronous (Redis
// Cluster): a failover can lose writes it acknowledged, so lost writes
// after faults are a measured figure there, not a failure. The string
// says why.
type AsyncReplication interface {
	AsyncReplication() string
}

// FaultWatcher is a DB on a cluster whose shape faults can change (Redis
// Cluster promotes a replica when a primary fails). WatchFaults is called
// as the load under faults begins; the function it returns is called
// once every acknowledged record has been read back, ends the watch and
// returns what it saw: facts for the report (the topology before and
// after, the failover) and figures (seconds the cluster was not ok).
type FaultWatcher interface {
	WatchFaults(ctx context.Context) (done func(ctx context.Context) (facts map[string]string, metrics map[string]float64))
}
