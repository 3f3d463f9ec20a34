// Package ycsbhash is YCSB's record layout in Redis, shared by the
// single-node and the cluster target: one hash usertable:<key> per record
// (one key, so one slot in a cluster), its fields field0..fieldN-1; an
// insert or update is one HSET, a read one HMGET of every field in order
// (no map), as YCSB's own Redis binding does.
package ycsbhash

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"storebench/internal/kv"
)

// Prefix of every record's key (SCAN usertable:* finds them all).
const Prefix = "usertable:"

// Table holds the field names, boxed once (go-redis takes []any); safe
// for concurrent use.
type Table struct {
	mu     sync.RWMutex
	fields []any
}

// SetFields names fieldCount fields (Init and Attach).
func (t *Table) SetFields(fieldCount int) error {
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	names := make([]any, fieldCount)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	t.mu.Lock()
	t.fields = names
	t.mu.Unlock()
	return nil
}

func (t *Table) names() ([]any, error) {
	t.mu.RLock()
	f := t.fields
	t.mu.RUnlock()
	if f == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return f, nil
}

// Key is record key's Redis key.
func Key(key []byte) string {
	b := make([]byte, 0, len(Prefix)+len(key))
	return string(append(append(b, Prefix...), key...))
}

// HSet is the command that writes the non-nil fields of record key; nil
// when there is none to write.
func (t *Table) HSet(key []byte, fields [][]byte) ([]any, error) {
	names, err := t.names()
	if err != nil {
		return nil, err
	}
	if len(fields) > len(names) {
		return nil, fmt.Errorf("ycsb: %d fields, table has %d", len(fields), len(names))
	}
	args := make([]any, 2, 2+2*len(fields))
	args[0], args[1] = "hset", Key(key)
	for i, f := range fields {
		if f != nil {
			args = append(args, names[i], f)
		}
	}
	if len(args) == 2 {
		return nil, nil
	}
	return args, nil
}

// HMGet is the command that reads every field of record key.
func (t *Table) HMGet(key []byte) ([]any, error) {
	names, err := t.names()
	if err != nil {
		return nil, err
	}
	args := make([]any, 2+len(names))
	args[0], args[1] = "hmget", Key(key)
	copy(args[2:], names)
	return args, nil
}

// Values are HMGET's replies as the record's fields, copied into one
// allocation; a record with no field at all is kv.ErrNotFound.
func Values(key []byte, vals []any) ([][]byte, error) {
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
