// Package worker is the child-process side of storebench: `storebench
// worker` opens one target and runs the steps the coordinator sends it, so
// the target's RSS, CPU and page cache are its own and a crash of one
// engine cannot take the study down.
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/kv"
	"storebench/internal/measure/procstat"
	"storebench/internal/redact"
	"storebench/internal/results"
	"storebench/internal/target"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// Serve speaks the protocol on in/out until quit or end of input.
//
// A line it cannot parse is answered, never ignored: with an error event
// for the request's ID when the ID can be read, else with a
// protocol_error event, so the coordinator is not left waiting for an
// answer that will not come. An event that cannot be written ends the
// process (see fatal): a worker nobody hears must not go on working.
func Serve(in io.Reader, out io.Writer, version string) error {
	w := &server{out: out, version: version, starts: make(chan time.Time, 1)}
	w.send(wire.Event{Type: wire.EvHello, Hello: &wire.Hello{Protocol: wire.Version, PID: os.Getpid(), Version: version, GoVersion: runtime.Version()}})

	reqs := make(chan wire.Request)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			r, err := parseRequest(sc.Bytes())
			if err != nil {
				if r.ID > 0 {
					w.fail(r.ID, err)
				} else {
					w.send(wire.Event{Type: wire.EvProtocolError, Error: err.Error()})
				}
				continue
			}
			// Cancel is handled here, not queued: it must reach a step
			// that is running.
			if r.Cmd == wire.CmdCancel {
				w.cancelStep()
				continue
			}
			// So is start: it releases a step waiting at its barrier. A
			// start nobody waits for is a coordinator's fault, said
			// rather than kept for a later barrier.
			if r.Cmd == wire.CmdStart {
				select {
				case w.starts <- r.Start:
				default:
					w.send(wire.Event{Type: wire.EvProtocolError, Error: "start request while no step waits at a barrier"})
				}
				continue
			}
			reqs <- r
		}
		err := sc.Err()
		if err != nil {
			w.send(wire.Event{Type: wire.EvProtocolError, Error: fmt.Sprintf("reading requests: %v", err)})
		}
		readErr <- err
		close(reqs)
	}()

	for r := range reqs {
		stopBeat := w.heartbeat(r.ID)
		if r.Cmd == wire.CmdQuit {
			w.closeStore()
			stopBeat()
			w.send(wire.Event{ID: r.ID, Type: wire.EvDone})
			return nil
		}
		w.handle(r)
		stopBeat()
	}
	// The coordinator went away (closed our stdin): clean up and leave.
	w.closeStore()
	return <-readErr
}

// parseRequest decodes one request line. When the line is not a valid
// request it still returns the ID if one can be read from it, so that the
// error goes to the request that is waiting for it.
func parseRequest(line []byte) (wire.Request, error) {
	var r wire.Request
	err := json.Unmarshal(line, &r)
	if err == nil && r.ID <= 0 && r.Cmd != wire.CmdCancel {
		err = fmt.Errorf("request %q has no id", r.Cmd)
	}
	if err == nil {
		return r, nil
	}
	var lenient struct {
		ID int64 `json:"id"`
	}
	if json.Unmarshal(line, &lenient) != nil || lenient.ID < 0 {
		lenient.ID = 0
	}
	return wire.Request{ID: lenient.ID}, fmt.Errorf("bad request %s: %v", clip(line, 80), err)
}

// clip quotes at most n bytes of b for a message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// heartbeatEvery is wire.HeartbeatEvery; a variable so that a test can
// shorten it.
var heartbeatEvery = wire.HeartbeatEvery

// heartbeat sends heartbeat events for request id until the returned
// function is called; that function returns once no more will be sent.
func (w *server) heartbeat(id int64) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				w.send(wire.Event{ID: id, Type: wire.EvHeartbeat})
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

type server struct {
	version string
	mu      sync.Mutex // serialises writes to the protocol stream
	out     io.Writer
	// ended is the last request whose final event (done or error) was
	// written, guarded by mu: a heartbeat for it that lost the race with
	// that event is dropped, so the coordinator never hears of a request
	// after its end.
	ended int64

	cancelMu sync.Mutex
	cancel   context.CancelFunc
	// starts carries the start time of a start request to the step that
	// waits at its barrier.
	starts chan time.Time

	// uri is the URI of the target being opened or open: its secrets are
	// masked in every error the worker sends.
	uri atomic.Pointer[string]

	open *wire.OpenArgs
	info target.Info
	h    io.Closer
}

// fatal ends the worker when the protocol stream cannot be written: the
// coordinator can no longer hear it, so nothing it does can be reported.
// A variable so that a test can observe it.
var fatal = func(err error) {
	fmt.Fprintln(os.Stderr, "storebench worker:", redact.Text(err.Error()))
	os.Exit(1)
}

// send writes one event as a line. An event that cannot be encoded (a
// figure that is NaN or infinite) becomes an error event for its request,
// so the coordinator hears why instead of waiting; a write that fails is
// fatal.
func (w *server) send(e wire.Event) {
	if e.Error != "" {
		uri := ""
		if p := w.uri.Load(); p != nil {
			uri = *p
		}
		e.Error = redact.Scrub(uri, e.Error)
	}
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(wire.Event{ID: e.ID, Type: wire.EvError,
			Error: fmt.Sprintf("worker could not encode its %s event: %v", e.Type, err)})
		if e.ID == 0 {
			b, _ = json.Marshal(wire.Event{Type: wire.EvProtocolError,
				Error: fmt.Sprintf("worker could not encode its %s event: %v", e.Type, err)})
		}
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Type == wire.EvHeartbeat && e.ID != 0 && e.ID == w.ended {
		return
	}
	if e.ID != 0 && (e.Type == wire.EvDone || e.Type == wire.EvError) {
		w.ended = e.ID
	}
	if _, err := w.out.Write(b); err != nil {
		fatal(fmt.Errorf("writing the protocol stream: %w", err))
	}
}

func (w *server) fail(id int64, err error) {
	w.send(wire.Event{ID: id, Type: wire.EvError, Error: err.Error()})
}

func (w *server) cancelStep() {
	w.cancelMu.Lock()
	defer w.cancelMu.Unlock()
	if w.cancel != nil {
		w.cancel()
	}
}

func (w *server) handle(r wire.Request) {
	switch r.Cmd {
	case wire.CmdOpen:
		if r.Open == nil {
			w.fail(r.ID, fmt.Errorf("open: no arguments"))
			return
		}
		w.uri.Store(&r.Open.URI)
		opened, err := w.openStore(*r.Open, false)
		if err != nil {
			w.fail(r.ID, err)
			return
		}
		w.send(wire.Event{ID: r.ID, Type: wire.EvDone, Opened: opened})
	case wire.CmdStep:
		if r.Step == nil {
			w.fail(r.ID, fmt.Errorf("step: no arguments"))
			return
		}
		var prof *profiler
		if len(r.Profile) > 0 {
			var err error
			if prof, err = startProfile(r.Profile); err != nil {
				w.fail(r.ID, err)
				return
			}
		}
		st, err := w.runStep(r.ID, *r.Step)
		var profiles map[string][]byte
		if prof != nil {
			profiles = prof.stop()
		}
		if err != nil {
			if st != nil {
				st.Error = err.Error()
				w.send(wire.Event{ID: r.ID, Type: wire.EvError, Error: err.Error(), Step: st, Profiles: profiles})
				return
			}
			w.fail(r.ID, err)
			return
		}
		w.send(wire.Event{ID: r.ID, Type: wire.EvDone, Step: st, Profiles: profiles})
	case wire.CmdSample:
		s, err := w.sample()
		if err != nil {
			w.fail(r.ID, err)
			return
		}
		w.send(wire.Event{ID: r.ID, Type: wire.EvDone, Sample: s})
	case wire.CmdClose:
		if err := w.closeStore(); err != nil {
			w.fail(r.ID, err)
			return
		}
		w.send(wire.Event{ID: r.ID, Type: wire.EvDone})
	case wire.CmdDestroy:
		err := w.closeStore()
		if w.open != nil && w.open.Dir != "" {
			if rerr := os.RemoveAll(w.open.Dir); err == nil {
				err = rerr
			}
		}
		if err != nil {
			w.fail(r.ID, err)
			return
		}
		w.send(wire.Event{ID: r.ID, Type: wire.EvDone})
	default:
		w.fail(r.ID, fmt.Errorf("unknown command %q", r.Cmd))
	}
}

// openStore opens the target; fresh first deletes any data it had.
func (w *server) openStore(a wire.OpenArgs, fresh bool) (*wire.Opened, error) {
	if err := w.closeStore(); err != nil {
		return nil, err
	}
	info, err := target.Lookup(a.Target)
	if err != nil {
		return nil, err
	}
	if info.Open == nil {
		return nil, fmt.Errorf("%s is not available in this binary: %s", a.Target, info.Unavailable)
	}
	if fresh && a.Dir != "" {
		if err := os.RemoveAll(a.Dir); err != nil {
			return nil, fmt.Errorf("clearing %s: %w", a.Dir, err)
		}
	}
	h, err := info.Open(target.Options{Dir: a.Dir, URI: a.URI, Durability: kv.Durability(a.Durability), CacheBytes: a.CacheBytes, Extra: a.Options, Concurrency: a.Concurrency, External: a.External})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", a.Target, err)
	}
	w.open, w.info, w.h = &a, info, h
	o := &wire.Opened{Title: info.Title, Version: info.Version, Kind: info.Kind}
	if d, ok := h.(kv.Describer); ok {
		o.Settings = d.Settings()
	}
	if a.ClientCPUs > 0 {
		runtime.GOMAXPROCS(a.ClientCPUs)
		if o.Settings == nil {
			o.Settings = map[string]string{}
		}
		o.Settings["client_cpus"] = fmt.Sprintf("%d (the load generator's GOMAXPROCS)", a.ClientCPUs)
	}
	return o, nil
}

func (w *server) closeStore() error {
	if w.h == nil {
		return nil
	}
	err := w.h.Close()
	w.h = nil
	if err != nil {
		return fmt.Errorf("closing %s: %w", w.info.Name, err)
	}
	return nil
}

func (w *server) sample() (*wire.Sample, error) {
	p, err := procstat.Self()
	if err != nil {
		return nil, err
	}
	s := &wire.Sample{Process: p}
	if w.open != nil && w.open.Dir != "" {
		s.DiskAllocated, _, _ = procstat.DiskUsage(w.open.Dir)
		s.CacheResident, _, _ = procstat.PageCache(w.open.Dir)
	}
	return s, nil
}

// runStep executes one workload step between two resource snapshots.
func (w *server) runStep(id int64, st workload.Step) (*results.Step, error) {
	wl, err := workload.Lookup(st.Workload)
	if err != nil {
		return nil, err
	}
	if w.open == nil {
		return nil, fmt.Errorf("step before open")
	}
	// The step's context governs everything the step does on the target,
	// emptying a server for a fresh step included: a cancel must reach an
	// operation that waits on a server that stopped answering.
	ctx, cancel := context.WithCancel(context.Background())
	w.cancelMu.Lock()
	w.cancel = cancel
	w.cancelMu.Unlock()
	defer func() {
		w.cancelMu.Lock()
		w.cancel = nil
		w.cancelMu.Unlock()
		cancel()
	}()
	if err := w.readyForStep(ctx, st); err != nil {
		return nil, err
	}
	m := newStepMeter(w.open.Dir)
	retrier, _ := w.h.(target.Retrier)
	var retriedBefore int64
	if retrier != nil {
		retriedBefore = retrier.Retried()
	}
	res, runErr := wl.Execute(ctx, w.stepEnv(id, st, m), st)
	if res == nil {
		res = &results.Step{}
	}
	if retrier != nil {
		res.Retried = retrier.Retried() - retriedBefore
	}
	// Make what was written durable before disk is measured, so the disk
	// figure counts data and not only a write-ahead log in flight.
	if s, ok := w.h.(interface{ Sync() error }); ok && runErr == nil && !res.Partial {
		if err := s.Sync(); err != nil {
			runErr = fmt.Errorf("sync after %s: %w", st.Phase, err)
		}
	}
	res.Workload, res.Phase, res.N, res.Labels = st.Workload, st.Phase, st.N, st.Labels
	if res.Started.IsZero() {
		res.Started = time.Now()
	}
	m.finish(res)
	if ctx.Err() != nil {
		res.Partial = true
	}
	var ve *workload.VerifyError
	if errors.As(runErr, &ve) {
		res.Verify.Failed++
		res.Verify.First = ve.Error()
	}
	return res, runErr
}

// readyForStep refuses a shared step of an embedded engine, and opens
// the store afresh for a fresh step (or a first one), emptying a server
// in the first part of a shared fresh step.
func (w *server) readyForStep(ctx context.Context, st workload.Step) error {
	if st.Parts > 1 && w.open.Dir != "" {
		return fmt.Errorf("%s keeps its data in this worker's own directory: several workers cannot share it (an embedded engine has one process; use --workers with a server target)", w.info.Name)
	}
	if !st.Fresh && w.h != nil {
		return nil
	}
	if _, err := w.openStore(*w.open, st.Fresh); err != nil {
		return err
	}
	// A shared step empties the server once, in its first part; the
	// barrier the workload crosses before writing keeps the others'
	// writes after that.
	if r, ok := w.h.(target.Resetter); ok && st.Fresh && st.Part == 0 {
		if err := r.Reset(ctx); err != nil {
			return fmt.Errorf("emptying %s for a fresh step: %w", w.info.Name, err)
		}
	}
	return nil
}

// stepEnv is what the workload gets to run step st (request id): the
// open store, progress and resource samples through m, and a barrier
// for a step that needs one.
func (w *server) stepEnv(id int64, st workload.Step, m *stepMeter) *workload.Env {
	env := &workload.Env{
		Target: w.h,
		Opened: &workload.OpenSpec{Target: w.open.Target, Options: target.Options{Dir: w.open.Dir, URI: w.open.URI,
			Durability: kv.Durability(w.open.Durability), CacheBytes: w.open.CacheBytes, Extra: w.open.Options, Concurrency: w.open.Concurrency, External: w.open.External}},
		Progress: func(done, total int64) {
			w.send(wire.Event{ID: id, Type: wire.EvProgress, Progress: &wire.Progress{Done: done, Total: total}})
		},
		Sample: m.sample,
		Part:   st.Part,
		Parts:  st.Parts,
		Window: m.window,
	}
	// A step shared by several workers starts behind a barrier; so does
	// one with fault actions, whose offsets the coordinator counts from
	// the start it releases.
	if st.Parts > 1 || len(st.Faults) > 0 {
		env.Sync = func(ctx context.Context, timed bool) (time.Time, error) {
			return w.barrier(ctx, id, timed)
		}
	}
	return env
}

// barrier tells the coordinator the step (request id) is ready and waits
// for the start it releases.
func (w *server) barrier(ctx context.Context, id int64, timed bool) (time.Time, error) {
	// A start left over from a barrier this step never reached (the
	// coordinator's fault) must not release this one.
	select {
	case <-w.starts:
	default:
	}
	w.send(wire.Event{ID: id, Type: wire.EvReady, Timed: timed})
	select {
	case at := <-w.starts:
		return at, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// stepMeter measures a step's resources: the process and the data
// directory's device (dir; none when empty) before and after the step,
// and over the timed part's own window.
type stepMeter struct {
	dir       string
	before    procstat.Snapshot
	devBefore procstat.DeviceIO

	lastMu sync.Mutex
	last   procstat.Snapshot

	// The timed part's own window: its bytes and seconds go together, and
	// neither includes the setup before it nor the sync after it.
	winBefore procstat.Snapshot
	winDev    procstat.DeviceIO
	timed     *results.Window
}

// newStepMeter takes the snapshots before the step.
func newStepMeter(dir string) *stepMeter {
	m := &stepMeter{dir: dir}
	m.before, _ = procstat.Self()
	if dir != "" {
		m.devBefore, _ = procstat.DeviceOf(dir)
	}
	m.last = m.before
	return m
}

func (m *stepMeter) device() procstat.DeviceIO {
	if m.dir == "" {
		return procstat.DeviceIO{}
	}
	d, _ := procstat.DeviceOf(m.dir)
	return d
}

// sample is the process's resident memory and its CPU since the last
// sample (workload.Env.Sample).
func (m *stepMeter) sample() (int64, float64) {
	now, err := procstat.Self()
	if err != nil {
		return 0, 0
	}
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	cpu := procstat.CPUPercent(m.last, now)
	m.last = now
	return now.RSSBytes, cpu
}

// window marks the timed part's beginning or end (workload.Env.Window).
func (m *stepMeter) window(begin bool) {
	snap, err := procstat.Self()
	dev := m.device()
	if err != nil {
		return
	}
	if begin {
		m.winBefore, m.winDev = snap, dev
		return
	}
	if !m.winBefore.At.IsZero() {
		m.timed = results.NewWindow(m.winBefore, snap, m.winDev, dev)
	}
}

// finish takes the snapshots after the step into res's resources, with
// the data directory's disk usage and page cache.
func (m *stepMeter) finish(res *results.Step) {
	after, _ := procstat.Self()
	// The device is sampled right after the process, as before the step,
	// so its bytes were counted over the same interval as Seconds (the
	// disk usage and page cache scans below take time of their own).
	devAfter := m.device()
	res.Resources.Before, res.Resources.After = m.before, after
	res.Resources.CPUPercent = procstat.CPUPercent(m.before, after)
	res.Resources.Seconds = after.At.Sub(m.before.At).Seconds()
	res.Resources.Timed = m.timed
	if m.dir != "" {
		res.Resources.DiskAllocated, res.Resources.DiskApparent, _ = procstat.DiskUsage(m.dir)
		res.Resources.CacheResident, res.Resources.CacheTotal, _ = procstat.PageCache(m.dir)
		if devAfter.Device != "" && m.devBefore.Device != "" {
			res.Resources.SetDevice(m.devBefore, devAfter)
		}
	}
}
