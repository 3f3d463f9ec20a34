package aerospike

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
)

// The YCSB layout: set usertable, one record per key with a bin per field,
// and the ycsb.DB methods (no Scanner).

const setYCSB = "usertable"

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

// Init implements ycsb.DB: it truncates the usertable set.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	if err := s.c.Truncate(nil, s.ns, setYCSB, nil); err != nil {
		return err
	}
	s.fieldsMu.Lock()
	s.fieldNames = FieldNames(fieldCount)
	s.fieldsMu.Unlock()
	return nil
}

func (s *Store) names() ([]string, error) {
	s.fieldsMu.RLock()
	n := s.fieldNames
	s.fieldsMu.RUnlock()
	if n == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return n, nil
}

func (s *Store) ycsbKey(key []byte) (*as.Key, error) {
	k, err := as.NewKey(s.ns, setYCSB, string(key))
	return k, conn.AerospikeErr(err)
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	return s.put(ctx, s.write, key, fields)
}

// Update implements ycsb.DB: writes only the non-nil fields' bins
// (UPDATE_ONLY: a missing record is kv.ErrNotFound).
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	return s.put(ctx, s.updateOnly, key, fields)
}

func (s *Store) put(ctx context.Context, p *as.WritePolicy, key []byte, fields [][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := s.names()
	if err != nil {
		return err
	}
	bins, err := FieldBins(names, fields)
	if err != nil || len(bins) == 0 {
		return err
	}
	k, err := s.ycsbKey(key)
	if err != nil {
		return err
	}
	aerr := s.c.PutBins(p, k, bins...)
	if conn.AerospikeNotFound(aerr) {
		return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return conn.AerospikeErr(aerr)
}

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	k, err := s.ycsbKey(key)
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
