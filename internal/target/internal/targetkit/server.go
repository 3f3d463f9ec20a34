package targetkit

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"storebench/internal/kv"
)

// Server is what every server client reads from its options first.
type Server struct {
	Sync  bool  // the study's durability class is sync
	Extra Extra // its options, checked against the known names
	Pool  int   // connections (option "pool")
}

// ServerOptions checks a server target's options in the order every
// client did: durability, option names, the pool size, and that a URI is
// given (example shows its form when it is not).
func ServerOptions(d kv.Durability, extra map[string]string, uri string, known []string, defaultPool int, example string) (Server, error) {
	isSync, err := IsSync(d)
	if err != nil {
		return Server{}, err
	}
	ex, err := CheckExtra(kv.Options{Extra: extra}, known)
	if err != nil {
		return Server{}, err
	}
	pool, err := ex.Int("pool", defaultPool)
	if err != nil {
		return Server{}, err
	}
	if pool < 1 || pool > 4096 {
		return Server{}, fmt.Errorf("option pool: %d connections: want 1..4096", pool)
	}
	if uri == "" {
		return Server{}, errors.New("no URI given (" + example + ")")
	}
	return Server{Sync: isSync, Extra: ex, Pool: pool}, nil
}

// CopyFields copies driver-owned field bytes (valid only until the next
// row) into one allocation the caller owns.
func CopyFields[B ~[]byte](vals []B) [][]byte {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	slab := make([]byte, 0, n)
	out := make([][]byte, len(vals))
	for i, v := range vals {
		start := len(slab)
		slab = append(slab, v...)
		out[i] = slab[start:len(slab):len(slab)]
	}
	return out
}

// Scratch is a reusable scan destination for a row of n byte fields:
// Dest points at Vals, ready for database/sql's or pgx's Scan. The SQL
// clients keep them in a ScratchPool so reading a YCSB record allocates
// only the copy handed to the caller.
type Scratch[B ~[]byte] struct {
	Vals []B
	Dest []any
	Row  [][]byte // Vals as [][]byte (Fill)
}

// Fill returns the scanned values as [][]byte, still the driver's: valid
// until the next scan.
func (sc *Scratch[B]) Fill() [][]byte {
	for i, v := range sc.Vals {
		sc.Row[i] = v
	}
	return sc.Row
}

// ScratchPool recycles Scratch values.
type ScratchPool[B ~[]byte] struct{ p sync.Pool }

// Get returns a scratch for n fields.
func (sp *ScratchPool[B]) Get(n int) *Scratch[B] {
	sc, _ := sp.p.Get().(*Scratch[B])
	if sc == nil {
		sc = new(Scratch[B])
	}
	if len(sc.Vals) != n {
		sc.Vals = make([]B, n)
		sc.Dest = make([]any, n)
		sc.Row = make([][]byte, n)
		for i := range sc.Vals {
			sc.Dest[i] = &sc.Vals[i]
		}
	}
	return sc
}

// Put returns a scratch, dropping its references to driver buffers.
func (sp *ScratchPool[B]) Put(sc *Scratch[B]) {
	clear(sc.Vals)
	clear(sc.Row)
	sp.p.Put(sc)
}

// ParseURI parses a server target's uri and checks its scheme against
// want, the form the URI should have ("memcached://",
// "kafka://host:port"), whose scheme is what comes before "://".
func ParseURI(uri, want string) (*url.URL, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	if scheme, _, _ := strings.Cut(want, "://"); u.Scheme != scheme {
		return nil, fmt.Errorf("scheme %q: want %s", u.Scheme, want)
	}
	return u, nil
}
