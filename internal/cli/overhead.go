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

// overheadOpts are storebench overhead's flags, checked.
type overheadOpts struct {
	keys, gets, rounds int
	levels             []int // --concurrency
	target, workload   string
}

func overheadFlags(fs *cmdFlags) (overheadOpts, error) {
	o := overheadOpts{keys: fs.num("keys"), gets: fs.num("gets"), rounds: fs.num("rounds"), target: fs.str("target"), workload: fs.str("workload")}
	conc := fs.str("concurrency")
	for _, f := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return o, usagef("--concurrency %q: %q is not a number of goroutines from 1 to 4096", conc, f)
		}
		o.levels = append(o.levels, n)
	}
	if o.keys < 1 || o.gets < 1 || o.rounds < 1 {
		return o, usagef("--keys, --gets and --rounds must be at least 1")
	}
	if o.rounds > maxOverheadRounds {
		return o, usagef("--rounds %d: want 1..%d", o.rounds, maxOverheadRounds)
	}
	if o.workload != "get" && o.workload != "ycsb-c" {
		return o, usagef("--workload %q: want get or ycsb-c", o.workload)
	}
	return o, nil
}

func cmdOverhead(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("overhead", overheadUsage, stderr)
	if code, stop := fs.parse(args, stdout); stop {
		return code
	}
	o, err := overheadFlags(fs)
	if err != nil {
		return fail(stderr, err)
	}
	eng, err := kv.Lookup(o.target)
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
	m := &overheadRun{overheadOpts: o, ctx: ctx, s: s, title: eng.Title, stdout: stdout, stderr: stderr}
	if o.workload == "ycsb-c" {
		return m.ycsbC()
	}
	return m.randomGets()
}

// overheadRun is one storebench overhead on an open engine.
type overheadRun struct {
	overheadOpts
	ctx            context.Context
	s              kv.Store
	title          string // the engine's
	stdout, stderr io.Writer
}

// failed ends overhead on err (see overheadFailed).
func (m *overheadRun) failed(err error) int { return overheadFailed(m.ctx, m.stderr, err) }

// alternate runs round r of both sides at g goroutines, the bare loop
// first in odd rounds and second in even ones, so that drift over time
// favours neither; an interrupt is the round's error.
func (m *overheadRun) alternate(r, g int, bare, measured func(int) (cost, error)) (cost, cost, error) {
	var db, dm cost
	var err error
	if r%2 == 1 {
		if db, err = bare(g); err == nil {
			dm, err = measured(g)
		}
	} else {
		if dm, err = measured(g); err == nil {
			db, err = bare(g)
		}
	}
	if err == nil {
		err = m.ctx.Err()
	}
	return db, dm, err
}

// overheadKey is the key of record i of overhead's random gets.
func overheadKey(dst []byte, i uint64) []byte {
	dst = dst[:16]
	binary.BigEndian.PutUint64(dst, i*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(dst[8:], i)
	return dst
}

// pick is the record the get of sequence number seq reads, of n.
func pick(seq, n uint64) uint64 { return (seq * 0x9e3779b97f4a7c15 >> 7) % n }

// loadKeys writes --keys records of 100 bytes, in batches of 1000, and
// compacts the engine where it can.
func (m *overheadRun) loadKeys() error {
	val := make([]byte, 100)
	b := m.s.NewBatch()
	kbuf := make([]byte, 16)
	for i := 0; i < m.keys; i++ {
		b.Put(overheadKey(kbuf, uint64(i)), val)
		if b.Len() >= 1000 {
			if err := b.Commit(); err != nil {
				return err
			}
			if err := m.ctx.Err(); err != nil {
				return err
			}
			b = m.s.NewBatch()
		}
	}
	if err := b.Commit(); err != nil {
		return err
	}
	if c, ok := m.s.(kv.Compacter); ok {
		_ = c.Compact()
	}
	return nil
}

func (m *overheadRun) get(k []byte, seq uint64) error {
	_, err := m.s.Get(overheadKey(k, pick(seq, uint64(m.keys))))
	return err
}

// bareGets is the loop without the harness: n goroutines, the gets split
// as the runner splits them, no clock read, no histogram.
func (m *overheadRun) bareGets(n int) (cost, error) {
	errs := make([]error, n)
	ks := keyBufs(n)
	ctx, gets := m.ctx, m.gets
	var wg sync.WaitGroup
	t0 := begin()
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			k := ks[g]
			for i := g; i < gets; i += n {
				if err := m.get(k, uint64(i)); err != nil {
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

// runnerGets are the same gets through the runner.
func (m *overheadRun) runnerGets(n int) (cost, error) {
	ks := keyBufs(n)
	t0 := begin()
	_, err := runner.Run(m.ctx, runner.Closed(n, int64(m.gets)), func(ctx context.Context, w int, seq int64) error {
		return m.get(ks[w], uint64(seq))
	})
	return t0.done(), err
}

// perOp is c per operation of ops, in nanoseconds: wall and CPU time.
func (c cost) perOp(ops int) (wall, cpu float64) {
	return float64(c.wall.Nanoseconds()) / float64(ops), float64(c.cpu.Nanoseconds()) / float64(ops)
}

// randomGets compares random gets through the runner with a bare loop,
// round by round at each --concurrency, and prints the median ratios.
func (m *overheadRun) randomGets() int {
	if err := m.loadKeys(); err != nil {
		return m.failed(err)
	}
	// Warm the cache and the code paths once before measuring.
	if _, err := m.bareGets(1); err != nil {
		return m.failed(err)
	}
	fmt.Fprintf(m.stdout, "random gets on %s, %d keys, %d gets per round\n", m.title, m.keys, m.gets)
	fmt.Fprintf(m.stdout, "%-10s %-6s %14s %14s %8s %14s %14s %8s\n", "goroutines", "round", "bare ns/op", "runner ns/op", "ratio", "bare cpu/op", "runner cpu/op", "cpu")
	medians := make([]float64, len(m.levels))
	cpuMedians := make([]float64, len(m.levels))
	for li, n := range m.levels {
		var ratios, cpuRatios []float64
		for r := 1; r <= m.rounds; r++ {
			db, dr, err := m.alternate(r, n, m.bareGets, m.runnerGets)
			if err != nil {
				return m.failed(err)
			}
			nb, cb := db.perOp(m.gets)
			nr, cr := dr.perOp(m.gets)
			ratios = append(ratios, nr/nb)
			cpuRatios = append(cpuRatios, cr/cb)
			fmt.Fprintf(m.stdout, "%-10d %-6d %14.1f %14.1f %8.3f %14.1f %14.1f %8.3f\n", n, r, nb, nr, nr/nb, cb, cr, cr/cb)
		}
		sort.Float64s(ratios)
		sort.Float64s(cpuRatios)
		medians[li] = ratios[len(ratios)/2]
		cpuMedians[li] = cpuRatios[len(cpuRatios)/2]
	}
	for li, n := range m.levels {
		fmt.Fprintf(m.stdout, "goroutines %d: median runner/bare = %.3f (target <= 1.03); CPU time %.3f\n", n, medians[li], cpuMedians[li])
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

// ycsbBench is overhead --workload ycsb-c: YCSB workload C (the ycsb
// workload's step) against a bare loop reading the same records through
// the engine.
type ycsbBench struct {
	*overheadRun
	raw json.RawMessage // the step's parameters
	env *workload.Env
}

// ycsbC compares YCSB workload C with the bare loop, round by round at
// each --concurrency, and prints the median time YCSB C adds per read.
func (m *overheadRun) ycsbC() int {
	p := ycsb.Params{Workloads: []string{"c"}, Operations: study.Count(m.gets), Fields: 10, FieldLength: 100,
		Distribution: "uniform", MaxScanLength: 100, Client: "events"}
	raw, err := json.Marshal(p)
	if err != nil {
		return fail(m.stderr, err)
	}
	y := &ycsbBench{overheadRun: m, raw: raw, env: &workload.Env{Target: m.s}}
	if _, err := (ycsb.YCSB{}).Execute(m.ctx, y.env, y.step("load", 8)); err != nil {
		return m.failed(fmt.Errorf("loading the YCSB table: %w", err))
	}
	if c, ok := m.s.(kv.Compacter); ok {
		_ = c.Compact()
	}
	if _, err := y.bare(1); err != nil {
		return m.failed(err)
	}
	fmt.Fprintf(m.stdout, "YCSB C on %s, %d records of 10x100 bytes, %d reads per round\n", m.title, m.keys, m.gets)
	fmt.Fprintf(m.stdout, "%-10s %-6s %14s %14s %10s %14s %14s %10s\n", "goroutines", "round", "bare ns/op", "ycsb ns/op", "added", "bare cpu/op", "ycsb cpu/op", "added cpu")
	type fig struct{ added, cpu []float64 }
	figs := make([]fig, len(m.levels))
	for li, g := range m.levels {
		for r := 1; r <= m.rounds; r++ {
			db, dy, err := m.alternate(r, g, y.bare, y.viaYCSB)
			if err != nil {
				return m.failed(err)
			}
			nb, cb := db.perOp(m.gets)
			ny, cy := dy.perOp(m.gets)
			figs[li].added = append(figs[li].added, ny-nb)
			figs[li].cpu = append(figs[li].cpu, cy-cb)
			fmt.Fprintf(m.stdout, "%-10d %-6d %14.1f %14.1f %10.1f %14.1f %14.1f %10.1f\n", g, r, nb, ny, ny-nb, cb, cy, cy-cb)
		}
	}
	for li, g := range m.levels {
		sort.Float64s(figs[li].added)
		sort.Float64s(figs[li].cpu)
		fmt.Fprintf(m.stdout, "goroutines %d: YCSB C adds a median %.1f ns per read over the bare loop (wall); CPU %.1f ns\n", g, figs[li].added[m.rounds/2], figs[li].cpu[m.rounds/2])
	}
	return exitOK
}

// step is the ycsb workload's step of phase at n goroutines, over the
// table of --keys records.
func (y *ycsbBench) step(phase string, n int) workload.Step {
	return workload.Step{Workload: "ycsb", Phase: phase, N: int64(y.keys), Seed: 1, Concurrency: n, Params: y.raw, Largest: int64(y.keys)}
}

// bare reads the records' keys through the engine's View at g
// goroutines, with no check.
func (y *ycsbBench) bare(g int) (cost, error) {
	errs := make([]error, g)
	ks := keyBufs(g)
	ctx, s, gets, n := y.ctx, y.s, y.gets, uint64(y.keys)
	nop := func([]byte) error { return nil }
	var wg sync.WaitGroup
	t0 := begin()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			k := ks[w][:0]
			for i := w; i < gets; i += g {
				k = ycsb.RecordKey(k, pick(uint64(i), n))
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

// viaYCSB runs YCSB C's step at g goroutines, every read verified.
func (y *ycsbBench) viaYCSB(g int) (cost, error) {
	t0 := begin()
	res, err := (ycsb.YCSB{}).Execute(y.ctx, y.env, y.step("c", g))
	if err == nil && res.Verify.Checked != int64(y.gets) {
		err = fmt.Errorf("ycsb c verified %d reads of %d", res.Verify.Checked, y.gets)
	}
	return t0.done(), err
}
