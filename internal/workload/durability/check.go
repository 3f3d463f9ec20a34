package durability

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"storebench/internal/kv"
)

// A record is numbered by its writer and sequence number and carries its
// batch (the first sequence number of the atomic batch it was written in,
// and the batch's size: 1 for a single put), a payload derived from those
// numbers, and a CRC-32C of all of it, so that a value read back after a
// crash tells whether it is the one written, whole.
//
//	"DR" writer:u16 seq:u64 batch:u64 size:u16 payload crc32c:u32
const headerLen = 2 + 2 + 8 + 8 + 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Key is the key of writer w's record seq.
func Key(w int, seq uint64) []byte { return fmt.Appendf(nil, "dur/%04d/%012d", w, seq) }

// Value is the value of writer w's record seq, written in the batch that
// starts at batch and holds size records, with a payload of n bytes.
func Value(w int, seq, batch uint64, size, n int) []byte {
	v := make([]byte, headerLen+n+4)
	v[0], v[1] = 'D', 'R'
	binary.BigEndian.PutUint16(v[2:], uint16(w))
	binary.BigEndian.PutUint64(v[4:], seq)
	binary.BigEndian.PutUint64(v[12:], batch)
	binary.BigEndian.PutUint16(v[20:], uint16(size))
	x := uint64(w)<<48 ^ seq*0x9e3779b97f4a7c15
	for i := 0; i < n; i++ {
		// splitmix64: a payload nobody could write by accident.
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		v[headerLen+i] = byte(z ^ z>>31)
	}
	binary.BigEndian.PutUint32(v[headerLen+n:], crc32.Checksum(v[:headerLen+n], castagnoli))
	return v
}

// Attempt is one record a writer sent: Acked once the engine said it was
// written (logged by the writer, outside the engine's process), At when
// (since the trial's writers started): a loss is then placed in time
// before the crash, which tells "lost the last second" (appendfsync
// everysec) from "lost everything".
type Attempt struct {
	Writer    int           `json:"w"`
	Seq       uint64        `json:"seq"`
	Batch     uint64        `json:"batch"`
	BatchSize int           `json:"size"`
	Acked     bool          `json:"acked"`
	At        time.Duration `json:"at,omitempty"`
	// TimedOut: the engine timed the write out before the crash (it
	// may still have applied it: present after the crash, a phantom).
	TimedOut bool `json:"timed_out,omitempty"`
}

// Counts are what a read-back after a crash found.
type Counts struct {
	// Acked and Unacked are the records written and acknowledged, and
	// sent but not acknowledged when the process died.
	Acked, Unacked int64
	// Lost: acknowledged, absent after the restart.
	Lost int64
	// Corrupted: present with a wrong checksum or content (acknowledged
	// or not).
	Corrupted int64
	// Torn: atomic batches of which some records are present and whole
	// and others not.
	Torn int64
	// Phantom: not acknowledged, yet present and whole (a write that
	// landed before the crash cut its acknowledgement: allowed, counted).
	Phantom int64
	// TimedOut: records whose write the engine timed out before the
	// crash (counted among Unacked too).
	TimedOut int64
}

// Add sums c and d.
func (c Counts) Add(d Counts) Counts {
	return Counts{c.Acked + d.Acked, c.Unacked + d.Unacked, c.Lost + d.Lost, c.Corrupted + d.Corrupted, c.Torn + d.Torn, c.Phantom + d.Phantom, c.TimedOut + d.TimedOut}
}

// Check reads back every attempted record with get (kv.ErrNotFound for
// an absent key) and counts what was lost, corrupted, torn and phantom;
// lost are the acknowledged attempts found absent. valueSize is the
// payload length the records were written with.
func Check(attempts []Attempt, valueSize int, get func(key []byte) ([]byte, error)) (c Counts, lost []Attempt, err error) {
	type batchKey struct {
		w     int
		batch uint64
	}
	whole := map[batchKey]int{}
	for _, a := range attempts {
		if a.Acked {
			c.Acked++
		} else {
			c.Unacked++
		}
		if a.TimedOut {
			c.TimedOut++
		}
		v, err := get(Key(a.Writer, a.Seq))
		present := err == nil
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return c, lost, fmt.Errorf("reading back writer %d record %d: %w", a.Writer, a.Seq, err)
		}
		ok := present && string(v) == string(Value(a.Writer, a.Seq, a.Batch, a.BatchSize, valueSize))
		switch {
		case present && !ok:
			c.Corrupted++
		case !present && a.Acked:
			c.Lost++
			lost = append(lost, a)
		case ok && !a.Acked:
			c.Phantom++
		}
		if a.BatchSize > 1 {
			k := batchKey{a.Writer, a.Batch}
			if _, seen := whole[k]; !seen {
				whole[k] = 0
			}
			if ok {
				whole[k]++
			}
		}
	}
	sizes := map[batchKey]int{}
	for _, a := range attempts {
		if a.BatchSize > 1 {
			sizes[batchKey{a.Writer, a.Batch}] = a.BatchSize
		}
	}
	for k, n := range whole {
		if n > 0 && n < sizes[k] {
			c.Torn++
		}
	}
	return c, lost, nil
}

// Window places a trial's acknowledged writes and its losses in time
// before its crash. Span runs from the first acknowledgement to the
// crash; OldestLost is how long before the crash the earliest lost
// acknowledged write was acknowledged (0: none lost). A policy that
// fsyncs once a second (Redis's appendfsync everysec) may lose about the
// last second or two, which is everything when Span is shorter: only
// OldestLost well short of Span shows that older writes were kept.
type Window struct{ Span, OldestLost time.Duration }

// LossWindow is the Window of a trial's attempts, lost the acknowledged
// ones Check found absent, crashAt the crash (since the writers started,
// as Attempt.At).
func LossWindow(attempts, lost []Attempt, crashAt time.Duration) Window {
	var w Window
	first := crashAt
	for _, a := range attempts {
		if a.Acked && a.At < first {
			first = a.At
		}
	}
	w.Span = crashAt - first
	for _, a := range lost {
		// An acknowledgement that came between the crash's decision and
		// the kill is at the crash, not after it.
		w.OldestLost = max(w.OldestLost, crashAt-min(a.At, crashAt))
	}
	return w
}
