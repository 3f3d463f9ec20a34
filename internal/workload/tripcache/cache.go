package tripcache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
	"storebench/internal/workload/tripcache/tripgen"
	"storebench/internal/workload/ycsb"
)

// cache is the get and put the trip builder needs, over any target that
// can get and put: an embedded engine's kv.Store, or a server's YCSB
// record layout (a one-field record per trip).
type cache interface {
	// get returns the trip's record, found false when absent.
	get(ctx context.Context, key []byte) (val []byte, found bool, err error)
	// put stores the record; create says the trip is new.
	put(ctx context.Context, key, val []byte, create bool) error
}

type kvCache struct{ s kv.Store }

func (c kvCache) get(_ context.Context, key []byte) ([]byte, bool, error) {
	v, err := c.s.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (c kvCache) put(_ context.Context, key, val []byte, _ bool) error { return c.s.Put(key, val) }

// dbCache keeps a trip as a one-field YCSB record. upsert says the
// target's Insert overwrites an existing record (Redis HSET, memcached
// set, Cassandra INSERT): a trip's whole record is replaced on every
// tick, so an update is then one write rather than the read-merge-write
// some targets' Update does (memcached: gets + cas).
type dbCache struct {
	db     ycsb.DB
	upsert bool
}

func (c dbCache) get(ctx context.Context, key []byte) ([]byte, bool, error) {
	f, err := c.db.Read(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if len(f) != 1 {
		return nil, false, fmt.Errorf("record of %d fields, want 1", len(f))
	}
	return f[0], true, nil
}

func (c dbCache) put(ctx context.Context, key, val []byte, create bool) error {
	if create || c.upsert {
		return c.db.Insert(ctx, key, [][]byte{val})
	}
	return c.db.Update(ctx, key, [][]byte{val})
}

// openCache finds get and put on the target's handle. A server's table
// is created empty (one field per record).
func openCache(ctx context.Context, t io.Closer) (cache, error) {
	switch h := t.(type) {
	case kv.Store:
		return kvCache{h}, nil
	case ycsb.DB:
		if err := h.Init(ctx, 1); err != nil {
			return nil, fmt.Errorf("tripcache: preparing the cache's table: %w", err)
		}
		// Probe whether Insert overwrites: insert one key twice.
		probe := []byte("trip:probe")
		if err := h.Insert(ctx, probe, [][]byte{{1}}); err != nil {
			return nil, fmt.Errorf("tripcache: probing the cache: %w", err)
		}
		upsert := h.Insert(ctx, probe, [][]byte{{2}}) == nil
		if upsert {
			if f, err := h.Read(ctx, probe); err != nil || len(f) != 1 || len(f[0]) != 1 || f[0][0] != 2 {
				upsert = false
			}
		}
		return dbCache{db: h, upsert: upsert}, nil
	}
	return nil, fmt.Errorf("tripcache: target can neither get nor put keys")
}

// tripKey is the cache key of a trip: "trip:<id>", text so that every
// server accepts it (memcached refuses control bytes in keys).
func tripKey(b []byte, id uint64) []byte {
	return strconv.AppendUint(append(b[:0], "trip:"...), id, 10)
}

// record is a trip as the consumer keeps it in the cache.
type record struct {
	tripgen.Trip
	LastSeq   uint32
	MaxSpeed  uint16
	Completed bool
}

const recordSize = 8 + 8 + 4 + 4 + 4 + 8 + 8 + 4*4 + 8 + 2 + 1

func (r *record) encode(b []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b[:0], r.ID)
	b = le.AppendUint64(b, r.Sensor)
	b = le.AppendUint32(b, r.FirstSeq)
	b = le.AppendUint32(b, r.LastSeq)
	b = le.AppendUint32(b, r.Ticks)
	b = le.AppendUint64(b, uint64(r.StartNs))
	b = le.AppendUint64(b, uint64(r.EndNs))
	b = le.AppendUint32(b, uint32(r.StartLat))
	b = le.AppendUint32(b, uint32(r.StartLon))
	b = le.AppendUint32(b, uint32(r.EndLat))
	b = le.AppendUint32(b, uint32(r.EndLon))
	b = le.AppendUint64(b, math.Float64bits(r.Meters))
	b = le.AppendUint16(b, r.MaxSpeed)
	c := byte(0)
	if r.Completed {
		c = 1
	}
	return append(b, c)
}

func (r *record) decode(b []byte) error {
	if len(b) != recordSize {
		return fmt.Errorf("trip record of %d bytes, want %d", len(b), recordSize)
	}
	le := binary.LittleEndian
	r.ID, r.Sensor = le.Uint64(b), le.Uint64(b[8:])
	r.FirstSeq, r.LastSeq, r.Ticks = le.Uint32(b[16:]), le.Uint32(b[20:]), le.Uint32(b[24:])
	r.StartNs, r.EndNs = int64(le.Uint64(b[28:])), int64(le.Uint64(b[36:]))
	r.StartLat, r.StartLon = int32(le.Uint32(b[44:])), int32(le.Uint32(b[48:]))
	r.EndLat, r.EndLon = int32(le.Uint32(b[52:])), int32(le.Uint32(b[56:]))
	r.Meters = math.Float64frombits(le.Uint64(b[60:]))
	r.MaxSpeed = le.Uint16(b[68:])
	r.Completed = b[70] == 1
	return nil
}

func init() { conn.AddOwnKeyPrefixes("trip:") }
