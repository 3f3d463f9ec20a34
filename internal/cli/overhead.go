package cli

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"storebench/internal/kv"
	"storebench/internal/runner"
)

const overheadUsage = `
Usage: storebench overhead [flags]

Measures what storebench's runner costs per operation: the same random
gets on Pebble, once through a bare loop and once through the runner with
its per-goroutine HdrHistograms and ticks, in alternating rounds of one
run. Prints each round and the median ratio runner/bare (target ≤ 1.03).

Example:
  storebench overhead --keys 100000 --gets 500000 --rounds 7
`

func cmdOverhead(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("overhead", overheadUsage, stderr)
	keys := fs.Int("keys", 100000, "keys loaded into Pebble")
	gets := fs.Int("gets", 500000, "random gets per round")
	rounds := fs.Int("rounds", 7, "rounds of each (alternating)")
	target := fs.String("target", "pebble", "target to read from")
	if code, stop := parse(fs, args, stdout); stop {
		return code
	}
	eng, err := kv.Lookup(*target)
	if err != nil {
		return fail(stderr, usagef("%v", err))
	}
	if eng.Open == nil {
		return fail(stderr, fmt.Errorf("%s: %s", eng.Name, eng.Unavailable))
	}
	dir, err := os.MkdirTemp("", "storebench-overhead-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(dir)
	s, err := eng.Open(kv.Options{Dir: dir, Durability: kv.Async})
	if err != nil {
		return fail(stderr, err)
	}
	defer s.Close()

	key := func(dst []byte, i uint64) []byte {
		dst = dst[:16]
		binary.BigEndian.PutUint64(dst, i*0x9e3779b97f4a7c15)
		binary.BigEndian.PutUint64(dst[8:], i)
		return dst
	}
	val := make([]byte, 100)
	b := s.NewBatch()
	kbuf := make([]byte, 16)
	for i := 0; i < *keys; i++ {
		b.Put(key(kbuf, uint64(i)), val)
		if b.Len() >= 1000 {
			if err := b.Commit(); err != nil {
				return fail(stderr, err)
			}
			b = s.NewBatch()
		}
	}
	if err := b.Commit(); err != nil {
		return fail(stderr, err)
	}
	if c, ok := s.(kv.Compacter); ok {
		_ = c.Compact()
	}
	n := uint64(*keys)
	pick := func(seq uint64) uint64 { return (seq * 0x9e3779b97f4a7c15 >> 7) % n }
	get := func(k []byte, seq uint64) error {
		_, err := s.Get(key(k, pick(seq)))
		return err
	}

	bare := func() (time.Duration, error) {
		k := make([]byte, 16)
		t0 := time.Now()
		for i := 0; i < *gets; i++ {
			if err := get(k, uint64(i)); err != nil {
				return 0, err
			}
		}
		return time.Since(t0), nil
	}
	viaRunner := func() (time.Duration, error) {
		k := make([]byte, 16)
		t0 := time.Now()
		_, err := runner.Run(context.Background(), runner.Config{Workers: 1, Ops: int64(*gets)}, func(ctx context.Context, _ int, seq int64) error {
			return get(k, uint64(seq))
		})
		return time.Since(t0), err
	}
	// Warm the cache and the code paths once before measuring.
	if _, err := bare(); err != nil {
		return fail(stderr, err)
	}
	var ratios []float64
	fmt.Fprintf(stdout, "random gets on %s, %d keys, %d gets per round\n", eng.Title, *keys, *gets)
	fmt.Fprintf(stdout, "%-6s %14s %14s %8s\n", "round", "bare ns/op", "runner ns/op", "ratio")
	for r := 1; r <= *rounds; r++ {
		// Alternate which goes first, so drift over time favours neither.
		var db, dr time.Duration
		if r%2 == 1 {
			if db, err = bare(); err == nil {
				dr, err = viaRunner()
			}
		} else {
			if dr, err = viaRunner(); err == nil {
				db, err = bare()
			}
		}
		if err != nil {
			return fail(stderr, err)
		}
		nb := float64(db.Nanoseconds()) / float64(*gets)
		nr := float64(dr.Nanoseconds()) / float64(*gets)
		ratios = append(ratios, nr/nb)
		fmt.Fprintf(stdout, "%-6d %14.1f %14.1f %8.3f\n", r, nb, nr, nr/nb)
	}
	sort.Float64s(ratios)
	fmt.Fprintf(stdout, "median runner/bare = %.3f (target <= 1.03)\n", ratios[len(ratios)/2])
	return exitOK
}
