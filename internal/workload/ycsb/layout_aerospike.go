package ycsb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
	"storebench/internal/workload/layout"
)

// The YCSB layout on an Aerospike client (conn.Aerospike): set usertable
// of the target's namespace, one record per key with a bin per field
// (field0 …), and the DB methods (no Scanner: Aerospike's scans are not
// ordered by key). The set is the workload's usertable (declared in
// layout_cql.go), which the target's Reset and cleanup truncate.

const setYCSB = "usertable"

// AerospikeDB is the YCSB table on an Aerospike target.
type AerospikeDB struct {
	c          *as.Client
	ns         string
	read       *as.BasePolicy
	write      *as.WritePolicy
	updateOnly *as.WritePolicy
	// names are the bin names Init set (nil before Init), read by every
	// operation without a lock.
	names atomic.Pointer[[]string]
}

// aerospikeDBs holds each Aerospike handle's layout, so that the steps
// of a run on one handle share the field names Init set
// (conn.Aerospike -> *AerospikeDB).
var aerospikeDBs layout.PerHandle[conn.Aerospike, *AerospikeDB]

// aerospikeDBOf is the YCSB layout on a, the same for every step on it:
// the target's policies, and an update that only updates (UPDATE_ONLY: a
// missing record is kv.ErrNotFound).
func aerospikeDBOf(a conn.Aerospike) *AerospikeDB {
	return aerospikeDBs.Of(a, func() *AerospikeDB {
		p := a.AerospikePolicies()
		upd := *p.Write
		upd.RecordExistsAction = as.UPDATE_ONLY
		return &AerospikeDB{c: a.AerospikeClient(), ns: a.AerospikeNamespace(), read: p.Read, write: p.Write, updateOnly: &upd}
	})
}

// FieldNames are the YCSB bin names of a record of n fields.
func FieldNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	return names
}

// FieldBins are the bins that write the non-nil fields.
func FieldBins(names []string, fields [][]byte) ([]*as.Bin, error) {
	if len(fields) > len(names) {
		return nil, fmt.Errorf("ycsb: %d fields, records have %d", len(fields), len(names))
	}
	bins := make([]*as.Bin, 0, len(fields))
	for i, f := range fields {
		if f != nil {
			bins = append(bins, as.NewBin(names[i], f))
		}
	}
	return bins, nil
}

// FieldsFromBins returns a record's fields in order; a field whose bin is
// absent (an empty value) reads back empty.
func FieldsFromBins(names []string, bins as.BinMap) ([][]byte, error) {
	out := make([][]byte, len(names))
	for i, n := range names {
		b, err := conn.AerospikeBytes(bins, n, true)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = []byte{}
		}
		out[i] = b
	}
	return out, nil
}

// Init implements DB: it truncates the usertable set.
func (s *AerospikeDB) Init(ctx context.Context, fieldCount int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	if err := s.c.Truncate(nil, s.ns, setYCSB, nil); err != nil {
		return err
	}
	n := FieldNames(fieldCount)
	s.names.Store(&n)
	return nil
}

func (s *AerospikeDB) fieldNames() ([]string, error) {
	n := s.names.Load()
	if n == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return *n, nil
}

func (s *AerospikeDB) key(key []byte) (*as.Key, error) {
	k, err := as.NewKey(s.ns, setYCSB, string(key))
	return k, conn.AerospikeErr(err)
}

// Insert implements DB.
func (s *AerospikeDB) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	return s.put(ctx, s.write, key, fields)
}

// Update implements DB: writes only the non-nil fields' bins
// (UPDATE_ONLY: a missing record is kv.ErrNotFound).
func (s *AerospikeDB) Update(ctx context.Context, key []byte, fields [][]byte) error {
	return s.put(ctx, s.updateOnly, key, fields)
}

func (s *AerospikeDB) put(ctx context.Context, p *as.WritePolicy, key []byte, fields [][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := s.fieldNames()
	if err != nil {
		return err
	}
	bins, err := FieldBins(names, fields)
	if err != nil || len(bins) == 0 {
		return err
	}
	k, err := s.key(key)
	if err != nil {
		return err
	}
	aerr := s.c.PutBins(p, k, bins...)
	if conn.AerospikeNotFound(aerr) {
		return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return conn.AerospikeErr(aerr)
}

// Read implements DB.
func (s *AerospikeDB) Read(ctx context.Context, key []byte) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	names, err := s.fieldNames()
	if err != nil {
		return nil, err
	}
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	rec, aerr := s.c.Get(s.read, k)
	if conn.AerospikeNotFound(aerr) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if aerr != nil {
		return nil, aerr
	}
	return FieldsFromBins(names, rec.Bins)
}
