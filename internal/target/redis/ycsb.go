package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"storebench/internal/kv"
)

// The YCSB layout: one hash usertable:<key> per record, and the ycsb.DB
// methods (no Scanner: see the package comment).

const (
	ycsbTable = "usertable:"
)

// Init implements ycsb.DB: it deletes the records of a previous run
// (SCAN + UNLINK of usertable:*, leaving other keys alone).
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	var cursor uint64
	for {
		keys, next, err := s.c.Scan(ctx, cursor, ycsbTable+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := s.c.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	names := make([]any, fieldCount)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	s.fieldsMu.Lock()
	s.fields = names
	s.fieldsMu.Unlock()
	return nil
}

// Attach implements ycsb.Attacher: the records another worker process's
// Init prepared are kept; this handle only learns the field names.
func (s *Store) Attach(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	names := make([]any, fieldCount)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	s.fieldsMu.Lock()
	s.fields = names
	s.fieldsMu.Unlock()
	return nil
}

func (s *Store) fieldNames() ([]any, error) {
	s.fieldsMu.RLock()
	f := s.fields
	s.fieldsMu.RUnlock()
	if f == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return f, nil
}

func ycsbKey(key []byte) string {
	b := make([]byte, 0, len(ycsbTable)+len(key))
	return string(append(append(b, ycsbTable...), key...))
}

// Insert implements ycsb.DB: one HSET of every field.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	return s.hset(ctx, key, fields)
}

// Update implements ycsb.DB: one HSET of the non-nil fields.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	return s.hset(ctx, key, fields)
}

func (s *Store) hset(ctx context.Context, key []byte, fields [][]byte) error {
	names, err := s.fieldNames()
	if err != nil {
		return err
	}
	if len(fields) > len(names) {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), len(names))
	}
	args := make([]any, 2, 2+2*len(fields))
	args[0], args[1] = "hset", ycsbKey(key)
	for i, f := range fields {
		if f != nil {
			args = append(args, names[i], f)
		}
	}
	if len(args) == 2 {
		return nil
	}
	return s.c.Do(ctx, args...).Err()
}

// Read implements ycsb.DB: HMGET of every field (ordered, no map), the
// values copied into one allocation.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	names, err := s.fieldNames()
	if err != nil {
		return nil, err
	}
	args := make([]any, 2+len(names))
	args[0], args[1] = "hmget", ycsbKey(key)
	copy(args[2:], names)
	vals, err := s.c.Do(ctx, args...).Slice()
	if err != nil {
		return nil, err
	}
	size, found := 0, false
	for _, v := range vals {
		if str, ok := v.(string); ok {
			size += len(str)
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	slab := make([]byte, 0, size)
	out := make([][]byte, len(vals))
	for i, v := range vals {
		str, _ := v.(string)
		start := len(slab)
		slab = append(slab, str...)
		out[i] = slab[start:len(slab):len(slab)]
	}
	return out, nil
}
