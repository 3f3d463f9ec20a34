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
	"time"

	"storebench/internal/kv"
	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/target"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// Serve speaks the protocol on in/out until quit or end of input.
func Serve(in io.Reader, out io.Writer, version string) error {
	w := &server{enc: json.NewEncoder(out), version: version}
	w.send(wire.Event{Type: wire.EvHello, Hello: &wire.Hello{Protocol: wire.Version, PID: os.Getpid(), Version: version, GoVersion: runtime.Version()}})

	reqs := make(chan wire.Request)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var r wire.Request
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				w.send(wire.Event{Type: wire.EvError, Error: fmt.Sprintf("bad request: %v", err)})
				continue
			}
			// Cancel is handled here, not queued: it must reach a step
			// that is running.
			if r.Cmd == wire.CmdCancel {
				w.cancelStep()
				continue
			}
			reqs <- r
		}
		readErr <- sc.Err()
		close(reqs)
	}()

	for r := range reqs {
		if r.Cmd == wire.CmdQuit {
			w.closeStore()
			w.send(wire.Event{ID: r.ID, Type: wire.EvDone})
			return nil
		}
		w.handle(r)
	}
	// The coordinator went away (closed our stdin): clean up and leave.
	w.closeStore()
	return <-readErr
}

type server struct {
	version string
	mu      sync.Mutex // serialises writes to the protocol stream
	enc     *json.Encoder

	cancelMu sync.Mutex
	cancel   context.CancelFunc

	open *wire.OpenArgs
	info target.Info
	h    io.Closer
}

func (w *server) send(e wire.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(e)
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
		st, err := w.runStep(r.ID, *r.Step)
		if err != nil {
			if st != nil {
				st.Error = err.Error()
				w.send(wire.Event{ID: r.ID, Type: wire.EvError, Error: err.Error(), Step: st})
				return
			}
			w.fail(r.ID, err)
			return
		}
		w.send(wire.Event{ID: r.ID, Type: wire.EvDone, Step: st})
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
	h, err := info.Open(target.Options{Dir: a.Dir, URI: a.URI, Durability: kv.Durability(a.Durability), CacheBytes: a.CacheBytes, Extra: a.Options})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", a.Target, err)
	}
	w.open, w.info, w.h = &a, info, h
	o := &wire.Opened{Title: info.Title, Version: info.Version, Kind: info.Kind}
	if d, ok := h.(kv.Describer); ok {
		o.Settings = d.Settings()
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
	if st.Fresh || w.h == nil {
		if _, err := w.openStore(*w.open, st.Fresh); err != nil {
			return nil, err
		}
		if r, ok := w.h.(target.Resetter); ok && st.Fresh {
			if err := r.Reset(context.Background()); err != nil {
				return nil, fmt.Errorf("emptying %s for a fresh step: %w", w.info.Name, err)
			}
		}
	}
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

	before, _ := procstat.Self()
	var devBefore procstat.DeviceIO
	if w.open.Dir != "" {
		devBefore, _ = procstat.DeviceOf(w.open.Dir)
	}
	last := before
	var lastMu sync.Mutex
	// The timed part's own window: its bytes and seconds go together, and
	// neither includes the setup before it nor the sync after it.
	var (
		winBefore procstat.Snapshot
		winDev    procstat.DeviceIO
		timed     *results.Window
	)
	sampleDev := func() procstat.DeviceIO {
		if w.open.Dir == "" {
			return procstat.DeviceIO{}
		}
		d, _ := procstat.DeviceOf(w.open.Dir)
		return d
	}
	env := &workload.Env{
		Target: w.h,
		Progress: func(done, total int64) {
			w.send(wire.Event{ID: id, Type: wire.EvProgress, Progress: &wire.Progress{Done: done, Total: total}})
		},
		Sample: func() (int64, float64) {
			now, err := procstat.Self()
			if err != nil {
				return 0, 0
			}
			lastMu.Lock()
			defer lastMu.Unlock()
			cpu := procstat.CPUPercent(last, now)
			last = now
			return now.RSSBytes, cpu
		},
		Window: func(begin bool) {
			snap, err := procstat.Self()
			dev := sampleDev()
			if err != nil {
				return
			}
			if begin {
				winBefore, winDev = snap, dev
				return
			}
			if !winBefore.At.IsZero() {
				timed = results.NewWindow(winBefore, snap, winDev, dev)
			}
		},
	}
	res, runErr := wl.Execute(ctx, env, st)
	if res == nil {
		res = &results.Step{}
	}
	// Make what was written durable before disk is measured, so the disk
	// figure counts data and not only a write-ahead log in flight.
	if s, ok := w.h.(interface{ Sync() error }); ok && runErr == nil && !res.Partial {
		if err := s.Sync(); err != nil {
			runErr = fmt.Errorf("sync after %s: %w", st.Phase, err)
		}
	}
	res.Workload, res.Phase, res.N = st.Workload, st.Phase, st.N
	if res.Started.IsZero() {
		res.Started = time.Now()
	}
	after, _ := procstat.Self()
	// The device is sampled right after the process, as before the step,
	// so its bytes were counted over the same interval as Seconds (the
	// disk usage and page cache scans below take time of their own).
	devAfter := sampleDev()
	res.Resources.Before, res.Resources.After = before, after
	res.Resources.CPUPercent = procstat.CPUPercent(before, after)
	res.Resources.Seconds = after.At.Sub(before.At).Seconds()
	res.Resources.Timed = timed
	if w.open.Dir != "" {
		res.Resources.DiskAllocated, res.Resources.DiskApparent, _ = procstat.DiskUsage(w.open.Dir)
		res.Resources.CacheResident, res.Resources.CacheTotal, _ = procstat.PageCache(w.open.Dir)
		if devAfter.Device != "" && devBefore.Device != "" {
			res.Resources.SetDevice(devBefore, devAfter)
		}
	}
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
