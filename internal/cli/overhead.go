package cli

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"storebench/internal/kv"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/workload"
	"storebench/internal/workload/ycsb"
)

const overheadUsage = `
Usage: storebench overhead [flags]

Measures what storebench's runner costs per operation: the same random
gets on Pebble, once through a bare loop and once through the runner with
its per-goroutine HdrHistograms and ticks, in alternating rounds of one
run. Prints each round and the median ratio runner/bare (target ≤ 1.03),
of the wall time and of the process's CPU time (the steadier figure on a
machine shared with other work).

With --concurrency N (or a list, 1,2,4,8) both run at N goroutines on the
same keys: the gets are split the same way (goroutine g does get g, g+N,
g+2N, ...), so a ratio above 1 at N goroutines and not at 1 is the
harness serializing its goroutines, not the engine.

With --workload ycsb-c the runner's side is YCSB workload C itself (the
ycsb workload's step, uniform requests, on a table of --keys records of
10 fields of 100 bytes loaded by its load step) and the bare loop reads
the same records' keys through the engine's View with no check; the
difference is what the harness adds per read: the request's choice, the
key, the decoding and the verification of every field, the runner's
clock and histograms.

Examples:
  storebench overhead --keys 100000 --gets 500000 --rounds 7
  storebench overhead --concurrency 1,2,4,8
  storebench overhead --workload ycsb-c --concurrency 1,8
`

// maxOverheadRounds bounds --rounds: a median needs a few, and a
// thousand rounds of half a million gets is already hours.
const maxOverheadRounds = 1000

func cmdOverhead(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("overhead", overheadUsage, stderr)
	keys := fs.Int("keys", 100000, "keys loaded into Pebble")
	gets := fs.Int("gets", 500000, "random gets per round")
	rounds := fs.Int("rounds", 7, "rounds of each (alternating), 1..1000")
	target := fs.String("target", "pebble", "target to read from")
	conc := fs.String("concurrency", "1", "goroutines of both the bare loop and the runner, comma-separated (e.g. 1,2,4,8), each 1..4096")
	wl := fs.String("workload", "get", "what the runner runs: get (random gets) or ycsb-c (YCSB workload C, every read verified)")
	if code, stop := parse(fs, args, stdout); stop {
		return code
	}
	var levels []int
	for _, f := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return fail(stderr, usagef("--concurrency %q: %q is not a number of goroutines from 1 to 4096", *conc, f))
		}
		levels = append(levels, n)
	}
	if *keys < 1 || *gets < 1 || *rounds < 1 {
		return fail(stderr, usagef("--keys, --gets and --rounds must be at least 1"))
	}
	if *rounds > maxOverheadRounds {
		return fail(stderr, usagef("--rounds %d: want 1..%d", *rounds, maxOverheadRounds))
	}
	if *wl != "get" && *wl != "ycsb-c" {
		return fail(stderr, usagef("--workload %q: want get or ycsb-c", *wl))
	}
	eng, err := kv.Lookup(*target)
	if err != nil {
		return fail(stderr, usagef("%v", err))
	}
	if eng.Open == nil {
		return fail(stderr, fmt.Errorf("%s: %s", eng.Name, eng.Unavailable))
	}
	// Ctrl-C (or SIGTERM, SIGHUP) stops the rounds; the engine is
	// closed before its directory is removed (deferred in that order),
	// so an interrupted overhead leaves nothing in the temporary
	// directory.
	ctx, stop := notifyInterrupt(context.Background())
	defer stop()
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
	failed := func(err error) int { return overheadFailed(ctx, stderr, err) }

	if *wl == "ycsb-c" {
		return overheadYCSB(ctx, s, eng.Title, *keys, *gets, *rounds, levels, stdout, stderr)
	}
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
				return failed(err)
			}
			if err := ctx.Err(); err != nil {
				return failed(err)
			}
			b = s.NewBatch()
		}
	}
	if err := b.Commit(); err != nil {
		return failed(err)
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

	// bare is the loop without the harness: n goroutines, the gets split
	// as the runner splits them, no clock read, no histogram.
	bare := func(n int) (cost, error) {
		errs := make([]error, n)
		ks := keyBufs(n)
		var wg sync.WaitGroup
		t0 := begin()
		for g := 0; g < n; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				k := ks[g]
				for i := g; i < *gets; i += n {
					if err := get(k, uint64(i)); err != nil {
						errs[g] = err
						return
					}
					if i&interruptEvery == 0 && ctx.Err() != nil {
						errs[g] = ctx.Err()
						return
					}
				}
			}(g)
		}
		wg.Wait()
		return t0.done(), errors.Join(errs...)
	}
	viaRunner := func(n int) (cost, error) {
		ks := keyBufs(n)
		t0 := begin()
		_, err := runner.Run(ctx, runner.Config{Workers: n, Ops: int64(*gets)}, func(ctx context.Context, w int, seq int64) error {
			return get(ks[w], uint64(seq))
		})
		return t0.done(), err
	}
	// Warm the cache and the code paths once before measuring.
	if _, err := bare(1); err != nil {
		return failed(err)
	}
	fmt.Fprintf(stdout, "random gets on %s, %d keys, %d gets per round\n", eng.Title, *keys, *gets)
	fmt.Fprintf(stdout, "%-10s %-6s %14s %14s %8s %14s %14s %8s\n", "goroutines", "round", "bare ns/op", "runner ns/op", "ratio", "bare cpu/op", "runner cpu/op", "cpu")
	medians := make([]float64, len(levels))
	cpuMedians := make([]float64, len(levels))
	for li, n := range levels {
		var ratios, cpuRatios []float64
		for r := 1; r <= *rounds; r++ {
			// Alternate which goes first, so drift over time favours neither.
			var db, dr cost
			if r%2 == 1 {
				if db, err = bare(n); err == nil {
					dr, err = viaRunner(n)
				}
			} else {
				if dr, err = viaRunner(n); err == nil {
					db, err = bare(n)
				}
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				return failed(err)
			}
			nb := float64(db.wall.Nanoseconds()) / float64(*gets)
			nr := float64(dr.wall.Nanoseconds()) / float64(*gets)
			cb := float64(db.cpu.Nanoseconds()) / float64(*gets)
			cr := float64(dr.cpu.Nanoseconds()) / float64(*gets)
			ratios = append(ratios, nr/nb)
			cpuRatios = append(cpuRatios, cr/cb)
			fmt.Fprintf(stdout, "%-10d %-6d %14.1f %14.1f %8.3f %14.1f %14.1f %8.3f\n", n, r, nb, nr, nr/nb, cb, cr, cr/cb)
		}
		sort.Float64s(ratios)
		sort.Float64s(cpuRatios)
		medians[li] = ratios[len(ratios)/2]
		cpuMedians[li] = cpuRatios[len(cpuRatios)/2]
	}
	for li, n := range levels {
		fmt.Fprintf(stdout, "goroutines %d: median runner/bare = %.3f (target <= 1.03); CPU time %.3f\n", n, medians[li], cpuMedians[li])
	}
	return exitOK
}

// interruptEvery: a bare loop looks for an interrupt once every
// interruptEvery+1 gets (a mask), rarely enough to cost nothing measurable.
const interruptEvery = 1<<12 - 1

// overheadFailed ends overhead on err: exit 130 when it was interrupted
// (the deferred close and removal still run), else the error's exit.
func overheadFailed(ctx context.Context, stderr io.Writer, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "storebench overhead: interrupted; its data is removed")
		return exitInterrupted
	}
	return fail(stderr, err)
}

// keyBufs gives each of n goroutines its key buffer, the same way for the
// bare loop and the runner: each on a cache line of its own (64-byte
// objects are aligned to 64), since every get writes its key. Sixteen-byte
// buffers allocated one after the other share lines, and goroutines
// writing them from two cores would charge the line's travels between the
// cores to whichever side allocated them so.
func keyBufs(n int) [][]byte {
	ks := make([][]byte, n)
	for i := range ks {
		ks[i] = make([]byte, 16, 64)
	}
	return ks
}

// cost is what one round took: wall time, and the process's CPU time
// (user and system, from the kernel's accounting), which a machine shared
// with other work disturbs far less than the wall time.
type cost struct{ wall, cpu time.Duration }

type mark struct {
	at  time.Time
	cpu time.Duration
}

// begin starts a measurement from a collected heap, so that neither side
// pays for collecting the garbage the other left (the gets allocate each
// value they return).
func begin() mark {
	runtime.GC()
	return mark{time.Now(), processCPU()}
}

func (m mark) done() cost { return cost{time.Since(m.at), processCPU() - m.cpu} }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// overheadYCSB compares YCSB workload C (the ycsb workload's step) with a
// bare loop reading the same records through the engine.
func overheadYCSB(ctx context.Context, s kv.Store, title string, records, gets, rounds int, levels []int, stdout, stderr io.Writer) int {
	p := ycsb.Params{Workloads: []string{"c"}, Operations: study.Count(gets), Fields: 10, FieldLength: 100,
		Distribution: "uniform", MaxScanLength: 100, Client: "events"}
	raw, err := json.Marshal(p)
	if err != nil {
		return fail(stderr, err)
	}
	step := func(phase string, n int) workload.Step {
		return workload.Step{Workload: "ycsb", Phase: phase, N: int64(records), Seed: 1, Concurrency: n, Params: raw, Largest: int64(records)}
	}
	failed := func(err error) int { return overheadFailed(ctx, stderr, err) }
	env := &workload.Env{Target: s}
	if _, err := (ycsb.YCSB{}).Execute(ctx, env, step("load", 8)); err != nil {
		return failed(fmt.Errorf("loading the YCSB table: %w", err))
	}
	if c, ok := s.(kv.Compacter); ok {
		_ = c.Compact()
	}
	n := uint64(records)
	pick := func(seq uint64) uint64 { return (seq * 0x9e3779b97f4a7c15 >> 7) % n }
	nop := func([]byte) error { return nil }
	bare := func(g int) (cost, error) {
		errs := make([]error, g)
		ks := keyBufs(g)
		var wg sync.WaitGroup
		t0 := begin()
		for w := 0; w < g; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				k := ks[w][:0]
				for i := w; i < gets; i += g {
					k = ycsb.RecordKey(k, pick(uint64(i)))
					if err := kv.View(s, k, nop); err != nil {
						errs[w] = err
						return
					}
					if i&interruptEvery == 0 && ctx.Err() != nil {
						errs[w] = ctx.Err()
						return
					}
				}
			}(w)
		}
		wg.Wait()
		return t0.done(), errors.Join(errs...)
	}
	viaYCSB := func(g int) (cost, error) {
		t0 := begin()
		res, err := (ycsb.YCSB{}).Execute(ctx, env, step("c", g))
		if err == nil && res.Verify.Checked != int64(gets) {
			err = fmt.Errorf("ycsb c verified %d reads of %d", res.Verify.Checked, gets)
		}
		return t0.done(), err
	}
	if _, err := bare(1); err != nil {
		return failed(err)
	}
	fmt.Fprintf(stdout, "YCSB C on %s, %d records of 10x100 bytes, %d reads per round\n", title, records, gets)
	fmt.Fprintf(stdout, "%-10s %-6s %14s %14s %10s %14s %14s %10s\n", "goroutines", "round", "bare ns/op", "ycsb ns/op", "added", "bare cpu/op", "ycsb cpu/op", "added cpu")
	type fig struct{ added, cpu []float64 }
	figs := make([]fig, len(levels))
	for li, g := range levels {
		for r := 1; r <= rounds; r++ {
			var db, dy cost
			var err error
			if r%2 == 1 {
				if db, err = bare(g); err == nil {
					dy, err = viaYCSB(g)
				}
			} else {
				if dy, err = viaYCSB(g); err == nil {
					db, err = bare(g)
				}
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				return failed(err)
			}
			nb, ny := float64(db.wall.Nanoseconds())/float64(gets), float64(dy.wall.Nanoseconds())/float64(gets)
			cb, cy := float64(db.cpu.Nanoseconds())/float64(gets), float64(dy.cpu.Nanoseconds())/float64(gets)
			figs[li].added = append(figs[li].added, ny-nb)
			figs[li].cpu = append(figs[li].cpu, cy-cb)
			fmt.Fprintf(stdout, "%-10d %-6d %14.1f %14.1f %10.1f %14.1f %14.1f %10.1f\n", g, r, nb, ny, ny-nb, cb, cy, cy-cb)
		}
	}
	for li, g := range levels {
		sort.Float64s(figs[li].added)
		sort.Float64s(figs[li].cpu)
		fmt.Fprintf(stdout, "goroutines %d: YCSB C adds a median %.1f ns per read over the bare loop (wall); CPU %.1f ns\n", g, figs[li].added[rounds/2], figs[li].cpu[rounds/2])
	}
	return exitOK
}
