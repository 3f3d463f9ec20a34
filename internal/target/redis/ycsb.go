package redis

import (
	"context"
	"fmt"

	"storebench/internal/target/internal/ycsbhash"
)

// The YCSB layout: one hash usertable:<key> per record, and the ycsb.DB
// methods (no Scanner: see the package comment).

// Init implements ycsb.DB: it deletes the records of a previous run
// (SCAN + UNLINK of usertable:*, leaving other keys alone).
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	var cursor uint64
	for {
		keys, next, err := s.c.Scan(ctx, cursor, ycsbhash.Prefix+"*", 1000).Result()
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
	return s.table.SetFields(fieldCount)
}

// Attach implements ycsb.Attacher: the records another worker process's
// Init prepared are kept; this handle only learns the field names.
func (s *Store) Attach(_ context.Context, fieldCount int) error {
	return s.table.SetFields(fieldCount)
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
	args, err := s.table.HSet(key, fields)
	if err != nil || args == nil {
		return err
	}
	return s.c.Do(ctx, args...).Err()
}

// Read implements ycsb.DB: HMGET of every field (ordered, no map), the
// values copied into one allocation.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	args, err := s.table.HMGet(key)
	if err != nil {
		return nil, err
	}
	vals, err := s.c.Do(ctx, args...).Slice()
	if err != nil {
		return nil, err
	}
	return ycsbhash.Values(key, vals)
}
