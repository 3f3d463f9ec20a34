package memcached

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"storebench/internal/evloop"
	"storebench/internal/kv"
	"storebench/internal/target"
)

// The YCSB layout on an event loop (target.EventedRecords): the same item
// per record as ycsb.go, in the text protocol written and parsed here. A
// read is one get; an insert one set; an update of some fields a gets,
// then a cas of the merged record (target.RecordSteps), from the gets
// again on a conflict, at most casRetries times, as Update does.

var (
	_ target.EventedRecords = (*Store)(nil)
	_ target.RecordSteps    = (*itemWire)(nil)

	exists   = []byte("EXISTS")
	notFound = []byte("NOT_FOUND")
)

// RecordEvents implements target.EventedRecords: memcached is reached
// over plain TCP.
func (s *Store) RecordEvents() bool { return true }

// OpenRecordConn implements target.EventedRecords.
func (s *Store) OpenRecordConn(ctx context.Context, fieldCount int) (int, target.RecordWire, error) {
	if fieldCount < 1 {
		return -1, nil, fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	c, err := s.dial(ctx, "YCSB connection")
	if err != nil {
		return -1, nil, err
	}
	nc, err := c.Take()
	if err != nil {
		c.Close()
		return -1, nil, fmt.Errorf("memcached: %w", err)
	}
	fd, err := evloop.Detach(nc)
	if err != nil {
		return -1, nil, fmt.Errorf("memcached: %w", err)
	}
	return fd, &itemWire{}, nil
}

// The request in flight.
const (
	wireGet  = iota // get: a read
	wireSet         // set: an insert, or an update of every field
	wireGets        // gets: an update's read of the record and its cas unique
	wireCas         // cas: an update's write of the merged record
)

// itemWire is one connection's YCSB protocol.
type itemWire struct {
	state   int
	key     []byte
	fields  [][]byte // an update's fields (nil: kept), until it is done
	tries   int      // an update's gets so far
	next    []byte   // a request Next appends, once a reply asked for it
	out     [][]byte // a read's decoded fields
	rec     []byte   // a merged record's encoding
	pending bool
}

func (c *itemWire) AppendRead(w, key []byte) []byte {
	c.state, c.key = wireGet, key
	w = append(w, "get "...)
	w = append(w, key...)
	return append(w, '\r', '\n')
}

// AppendWrite appends a set when every field is given (an insert), else
// the gets that starts an update.
func (c *itemWire) AppendWrite(w, key []byte, fields [][]byte) []byte {
	c.key, c.tries = key, 0
	for _, f := range fields {
		if f == nil {
			c.state, c.fields = wireGets, fields
			return c.appendGets(w)
		}
	}
	c.state = wireSet
	c.rec = encodeFields(c.rec[:0], fields)
	return c.appendStore(w, "set ", 0)
}

func (c *itemWire) appendGets(w []byte) []byte {
	c.tries++
	w = append(w, "gets "...)
	w = append(w, c.key...)
	return append(w, '\r', '\n')
}

// appendStore appends "set|cas key 0 0 len [unique]" and c.rec.
func (c *itemWire) appendStore(w []byte, cmd string, unique uint64) []byte {
	w = append(w, cmd...)
	w = append(w, c.key...)
	w = append(w, " 0 0 "...)
	w = strconv.AppendInt(w, int64(len(c.rec)), 10)
	if cmd == "cas " {
		w = append(w, ' ')
		w = strconv.AppendUint(w, unique, 10)
	}
	w = append(w, '\r', '\n')
	w = append(w, c.rec...)
	return append(w, '\r', '\n')
}

// Next implements target.RecordSteps.
func (c *itemWire) Next(w []byte) []byte {
	if !c.pending {
		return nil
	}
	c.pending = false
	return append(w, c.next...)
}

// Reply implements target.RecordWire.
func (c *itemWire) Reply(in []byte) (int, bool, [][]byte, error, error) {
	switch c.state {
	case wireSet, wireCas:
		l, k, err := line(in)
		if err != nil || k == 0 {
			return 0, false, nil, nil, err
		}
		switch {
		case bytes.Equal(l, stored):
			return k, true, nil, nil, nil
		case c.state == wireCas && bytes.Equal(l, exists):
			// Another client wrote the record since the gets.
			if c.tries >= casRetries {
				return k, true, nil, fmt.Errorf("record %q: %d compare-and-swap conflicts in a row", c.key, casRetries), nil
			}
			c.state, c.next, c.pending = wireGets, c.appendGets(c.next[:0]), true
			return k, false, nil, nil, nil
		case c.state == wireCas && bytes.Equal(l, notFound):
			return k, true, nil, fmt.Errorf("record %q: %w", c.key, kv.ErrNotFound), nil
		case serverError(l):
			return k, true, nil, fmt.Errorf("memcached: %s", l), nil
		}
		return k, false, nil, nil, fmt.Errorf("memcached: a store of %q answered %q", c.key, l)
	}
	// get or gets: END, or VALUE key flags bytes [unique], the data, END;
	// taken only once all of it is here.
	l, k, err := line(in)
	if err != nil || k == 0 {
		return 0, false, nil, nil, err
	}
	if bytes.Equal(l, end) {
		if c.state == wireGets {
			return k, true, nil, fmt.Errorf("record %q: %w", c.key, kv.ErrNotFound), nil
		}
		return k, true, nil, nil, nil
	}
	if serverError(l) {
		return k, true, nil, fmt.Errorf("memcached: %s", l), nil
	}
	size, unique, err := valueLine(l, c.key, c.state == wireGets)
	if err != nil {
		return 0, false, nil, nil, err
	}
	tail := k + size + 2
	if len(in) < tail+len(end)+2 {
		return 0, false, nil, nil, nil
	}
	if in[tail-2] != '\r' || in[tail-1] != '\n' {
		return 0, false, nil, nil, fmt.Errorf("memcached: get %q: value of %d bytes not followed by CRLF", c.key, size)
	}
	if l, k2, _ := line(in[tail:]); k2 == 0 || !bytes.Equal(l, end) {
		return 0, false, nil, nil, fmt.Errorf("memcached: get %q: %q after the value, want END", c.key, in[tail:min(len(in), tail+32)])
	}
	n := tail + len(end) + 2
	fields, derr := decodeInto(c.out[:0], in[k:tail-2])
	if derr != nil {
		return n, true, nil, fmt.Errorf("record %q: %w", c.key, derr), nil
	}
	c.out = fields
	if c.state == wireGet {
		return n, true, fields, nil, nil
	}
	// The update's merge, then its cas.
	if len(c.fields) > len(fields) {
		return n, true, nil, fmt.Errorf("record %q has %d fields, update gives %d", c.key, len(fields), len(c.fields)), nil
	}
	for i, f := range c.fields {
		if f != nil {
			fields[i] = f
		}
	}
	c.rec = encodeFields(c.rec[:0], fields)
	c.state, c.next, c.pending = wireCas, c.appendStore(c.next[:0], "cas ", unique), true
	return n, false, nil, nil, nil
}

// valueLine reads "VALUE key flags bytes [unique]" (the unique with a
// gets).
func valueLine(l, key []byte, gets bool) (size int, unique uint64, err error) {
	bad := func() (int, uint64, error) {
		return 0, 0, fmt.Errorf("memcached: get %q answered %q", key, l)
	}
	rest, ok := bytes.CutPrefix(l, []byte("VALUE "))
	if !ok {
		return bad()
	}
	// Split on single spaces, with no allocation: key, flags, bytes,
	// and the unique of a gets.
	var f [4][]byte
	nf := 0
	for nf < len(f) && len(rest) > 0 {
		f[nf], rest, _ = bytes.Cut(rest, []byte{' '})
		nf++
	}
	if nf < 3 || !bytes.Equal(f[0], key) || (gets && nf < 4) {
		return bad()
	}
	if size, err = atoi(f[2]); err != nil {
		return bad()
	}
	if gets {
		if unique, err = strconv.ParseUint(string(f[3]), 10, 64); err != nil {
			return bad()
		}
	}
	return size, unique, nil
}

// atoi parses a decimal length (no sign, at most 9 digits).
func atoi(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 9 {
		return 0, errors.New("bad length")
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("bad length")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// serverError says whether a reply line is the server's error answer.
func serverError(l []byte) bool {
	return bytes.HasPrefix(l, []byte("SERVER_ERROR")) || bytes.HasPrefix(l, []byte("CLIENT_ERROR")) || bytes.Equal(l, []byte("ERROR"))
}

// decodeInto decodes a record's fields into out (appended to, reused).
func decodeInto(out [][]byte, v []byte) ([][]byte, error) {
	for len(v) > 0 {
		l, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < l {
			return nil, errors.New("corrupt record encoding")
		}
		end := k + int(l)
		out = append(out, v[k:end:end])
		v = v[end:]
	}
	return out, nil
}
