package redis

import (
	"context"
	"fmt"
	"strconv"

	"storebench/internal/evloop"
	"storebench/internal/target"
	"storebench/internal/target/internal/ycsbhash"
	"storebench/internal/target/redis/resp"
)

// The YCSB layout on an event loop (target.EventedRecords): the same
// hash per record as ycsb.go, one HMGET of every field per read and one
// HSET per write, in RESP written and parsed here with no allocation per
// operation.

// RecordEvents implements target.EventedRecords: a plain TCP connection
// authenticated as the default user (TLS, a Unix socket and ACL users
// stay on go-redis).
func (s *Store) RecordEvents() bool {
	return s.opt.TLSConfig == nil && (s.opt.Network == "" || s.opt.Network == "tcp") &&
		(s.opt.Username == "" || s.opt.Username == "default")
}

// OpenRecordConn implements target.EventedRecords.
func (s *Store) OpenRecordConn(ctx context.Context, fieldCount int) (int, target.RecordWire, error) {
	if !s.RecordEvents() {
		return -1, nil, fmt.Errorf("redis: this connection (TLS, a Unix socket or an ACL user) cannot go to an event loop")
	}
	if fieldCount < 1 {
		return -1, nil, fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	c, err := resp.Dial(ctx, s.opt.Addr, s.opt.DB, s.opt.Password, openTimeout)
	if err != nil {
		return -1, nil, fmt.Errorf("redis: YCSB connection to %s: %w", s.opt.Addr, err)
	}
	nc, err := c.Take()
	if err != nil {
		c.Close()
		return -1, nil, fmt.Errorf("redis: %w", err)
	}
	fd, err := evloop.Detach(nc)
	if err != nil {
		return -1, nil, fmt.Errorf("redis: %w", err)
	}
	return fd, newHashWire(fieldCount), nil
}

// hashWire is the YCSB hash layout's protocol on an event loop.
type hashWire struct {
	names [][]byte // field0 … as bulk arguments
	// hmget is the end of every HMGET: the names of every field.
	hmget  []byte
	read   bool
	fields [][]byte
}

var (
	cmdHMGet = []byte("$5\r\nHMGET\r\n")
	cmdHSet  = []byte("$4\r\nHSET\r\n")
	empty    = []byte{}
)

func newHashWire(n int) *hashWire {
	w := &hashWire{names: make([][]byte, n), fields: make([][]byte, n)}
	for i := range w.names {
		w.names[i] = resp.AppendBulk(nil, []byte("field"+strconv.Itoa(i)))
		w.hmget = append(w.hmget, w.names[i]...)
	}
	return w
}

func appendKey(w, key []byte) []byte {
	w = append(w, '$')
	w = strconv.AppendInt(w, int64(len(ycsbhash.Prefix)+len(key)), 10)
	w = append(w, '\r', '\n')
	w = append(w, ycsbhash.Prefix...)
	w = append(w, key...)
	return append(w, '\r', '\n')
}

func (h *hashWire) AppendRead(w, key []byte) []byte {
	h.read = true
	w = resp.AppendArray(w, 2+len(h.names))
	w = appendKey(append(w, cmdHMGet...), key)
	return append(w, h.hmget...)
}

func (h *hashWire) AppendWrite(w, key []byte, fields [][]byte) []byte {
	h.read = false
	n := 0
	for _, f := range fields[:min(len(fields), len(h.names))] {
		if f != nil {
			n++
		}
	}
	w = resp.AppendArray(w, 2+2*n)
	w = appendKey(append(w, cmdHSet...), key)
	for i, f := range fields[:min(len(fields), len(h.names))] {
		if f != nil {
			w = resp.AppendBulk(append(w, h.names[i]...), f)
		}
	}
	return w
}

func (h *hashWire) Reply(in []byte) (int, bool, [][]byte, error, error) {
	kind, v, n, err := resp.Next(in)
	if err != nil || n == 0 {
		return 0, false, nil, nil, err
	}
	if kind == '-' {
		return n, true, nil, fmt.Errorf("%w: %s", resp.ErrServer, v), nil
	}
	if !h.read {
		if kind != ':' {
			return n, false, nil, nil, fmt.Errorf("redis: HSET answered %c%q", kind, v)
		}
		return n, true, nil, nil, nil
	}
	count, ok := resp.Int(v)
	if kind != '*' || !ok || count != len(h.names) {
		return n, false, nil, nil, fmt.Errorf("redis: HMGET of %d fields answered %c%q", len(h.names), kind, v)
	}
	found := false
	for i := range h.fields {
		kind, v, k, err := resp.Next(in[n:])
		if err != nil || k == 0 {
			return 0, false, nil, nil, err // the rest is yet to come
		}
		if kind != '$' {
			return n, false, nil, nil, fmt.Errorf("redis: HMGET answered field%d with %c%q", i, kind, v)
		}
		n += k
		if v == nil {
			v = empty
		} else {
			found = true
		}
		h.fields[i] = v
	}
	if !found {
		return n, true, nil, nil, nil
	}
	return n, true, h.fields, nil, nil
}
