package roots

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"storebench/internal/ads"
)

// Recorder is an ads.Store around another one (usually a plain engine
// through ads.FromKV) whose root after each block is a running SHA-256 of
// every write issued so far, in order. Two runs get the same roots exactly
// when they issued the same writes: the determinism tests use it on
// engines without roots of their own.
type Recorder struct {
	ads.Store
	h hash.Hash
}

// NewRecorder wraps s.
func NewRecorder(s ads.Store) *Recorder { return &Recorder{Store: s, h: sha256.New()} }

func (r *Recorder) write(op byte, key, value []byte) {
	var n [8]byte
	r.h.Write([]byte{op})
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	r.h.Write(n[:])
	r.h.Write(key)
	binary.BigEndian.PutUint64(n[:], uint64(len(value)))
	r.h.Write(n[:])
	r.h.Write(value)
}

func (r *Recorder) Set(key, value []byte) error {
	r.write('s', key, value)
	return r.Store.Set(key, value)
}

func (r *Recorder) Delete(key []byte) error {
	r.write('d', key, nil)
	return r.Store.Delete(key)
}

// Commit commits the wrapped store and returns the running hash as root.
func (r *Recorder) Commit() ([]byte, int64, error) {
	_, v, err := r.Store.Commit()
	return r.h.Sum(nil), v, err
}
