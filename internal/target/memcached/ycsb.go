package memcached

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bradfitz/gomemcache/memcache"

	"storebench/internal/kv"
)

// The YCSB layout: one item per record, its fields length-prefixed, and
// the ycsb.DB methods (no Scanner: memcached keeps no order).

// casRetries bounds the compare-and-swap attempts of one Update.
const casRetries = 100

// Init implements ycsb.DB: flush_all drops what a previous run left on
// a server storebench started; on one named by URI only storebench's own
// keys go (Reset), never the rest.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	s.fields = fieldCount
	if s.external {
		return s.deleteOwn(ctx)
	}
	return s.c.FlushAll()
}

// Insert implements ycsb.DB: one set.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	k, err := itemKey(key)
	if err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	return s.c.Set(&memcache.Item{Key: k, Value: encodeFields(nil, fields)})
}

// Update implements ycsb.DB: gets, merge, cas; retried when another
// client wrote the record in between.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	k, err := itemKey(key)
	if err != nil {
		return err
	}
	var buf []byte
	for try := 0; try < casRetries; try++ {
		if err := s.begin(ctx); err != nil {
			return err
		}
		it, err := s.c.Get(k)
		if errors.Is(err, memcache.ErrCacheMiss) {
			return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
		}
		if err != nil {
			return err
		}
		old, err := decodeFields(it.Value)
		if err != nil {
			return fmt.Errorf("record %q: %w", key, err)
		}
		if len(fields) > len(old) {
			return fmt.Errorf("record %q has %d fields, update gives %d", key, len(old), len(fields))
		}
		for i, f := range fields {
			if f != nil {
				old[i] = f
			}
		}
		buf = encodeFields(buf[:0], old)
		it.Value = buf
		err = s.c.CompareAndSwap(it)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, memcache.ErrCASConflict):
			continue
		case errors.Is(err, memcache.ErrNotStored):
			return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
		default:
			return err
		}
	}
	return fmt.Errorf("record %q: %d compare-and-swap conflicts in a row", key, casRetries)
}

// Read implements ycsb.DB: one get; the fields alias the item's value.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	k, err := itemKey(key)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	it, err := s.c.Get(k)
	if errors.Is(err, memcache.ErrCacheMiss) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	f, err := decodeFields(it.Value)
	if err != nil {
		return nil, fmt.Errorf("record %q: %w", key, err)
	}
	return f, nil
}

func encodeFields(dst []byte, fields [][]byte) []byte {
	n := 0
	for _, f := range fields {
		n += binary.MaxVarintLen32 + len(f)
	}
	if cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	for _, f := range fields {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return dst
}

// decodeFields decodes a record's fields, in a slice of their number.
func decodeFields(v []byte) ([][]byte, error) {
	n := 0
	for rest := v; len(rest) > 0; n++ {
		l, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < l {
			return nil, errors.New("corrupt record encoding")
		}
		rest = rest[k+int(l):]
	}
	return decodeInto(make([][]byte, 0, n), v)
}
