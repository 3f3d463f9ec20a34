package coordinator

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// group is the worker processes that drive one target: one, or several
// (study workers) placed round-robin on the study's hosts.
type group struct {
	procs []*proc
	// remote[i] is set for a worker on another host.
	remote []bool
	// lead is how far ahead of the release of a barrier the shared start
	// is: long enough for the start request to reach every worker.
	lead time.Duration
}

// checkHosts makes sure every ssh host of the study's placement answers,
// with our binary (ensureRemote: the check startRemote does again), in
// the words startGroup would fail with.
func checkHosts(ctx context.Context, o Options, s *study.Study) error {
	hosts := s.Placement()
	seen := map[string]bool{}
	for i, h := range hosts {
		if h.Local || seen[h.Raw] {
			continue
		}
		seen[h.Raw] = true
		if _, err := ensureRemote(ctx, o, s.SSH, h); err != nil {
			if len(hosts) > 1 {
				return fmt.Errorf("worker %d (%s): %w", i, h.Raw, err)
			}
			return err
		}
	}
	return nil
}

// startGroup starts the study's workers for target name; the first
// worker's log is logs/<name>.log, worker i's logs/<name>.w<i>.log.
func startGroup(ctx context.Context, o Options, s *study.Study, name, runDir string) (*group, error) {
	g := &group{lead: 200 * time.Millisecond}
	for i, h := range s.Placement() {
		logPath := filepath.Join(runDir, "logs", name+".log")
		if i > 0 {
			logPath = filepath.Join(runDir, "logs", fmt.Sprintf("%s.w%d.log", name, i))
		}
		var p *proc
		var err error
		if h.Local {
			p, err = startWorker(o.Exe, logPath)
		} else {
			p, _, err = startRemote(ctx, o, s.SSH, h, logPath)
			g.lead = time.Second
		}
		if err != nil {
			g.quit(5 * time.Second)
			if len(s.Placement()) > 1 {
				return nil, fmt.Errorf("worker %d (%s): %w", i, h.Raw, err)
			}
			return nil, err
		}
		g.procs = append(g.procs, p)
		g.remote = append(g.remote, !h.Local)
	}
	return g, nil
}

func (g *group) quit(grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range g.procs {
		wg.Add(1)
		go func(p *proc) {
			defer wg.Done()
			p.quit(grace)
		}(p)
	}
	wg.Wait()
}

// each calls every worker with r (in parallel) and returns the first
// worker's answer, or the first error, naming the worker when there are
// several.
func (g *group) each(r wire.Request) (wire.Event, error) {
	evs := make([]wire.Event, len(g.procs))
	errs := make([]error, len(g.procs))
	var wg sync.WaitGroup
	for i, p := range g.procs {
		wg.Add(1)
		go func(i int, p *proc) {
			defer wg.Done()
			evs[i], errs[i] = p.call(r, nil)
		}(i, p)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			if len(g.procs) > 1 {
				return evs[0], fmt.Errorf("worker %d (%s): %w", i, g.procs[i].host, err)
			}
			return evs[0], err
		}
	}
	return evs[0], nil
}

// step runs one step. With several workers a step whose workload splits
// runs on all of them at once, each with its part, behind a barrier, and
// their results are merged (mergeParts); one that does not split runs on
// the first worker alone and says why (Step.Unsplit). Profiles are the
// first worker's. A step with fault actions also waits at the barrier,
// alone or not, so that onStart learns the instant its timed part
// begins: the faults' offsets count from there.
func (g *group) step(ctx context.Context, st workload.Step, profile []string, onProgress func(done, total int64), onStart func(at time.Time)) (*results.Step, map[string][]byte, error) {
	var started sync.Once
	begin := func(at time.Time) {
		started.Do(func() {
			if onStart != nil {
				onStart(at)
			}
		})
	}
	single := func(why string) (*results.Step, map[string][]byte, error) {
		var onReady func(bool)
		if len(st.Faults) > 0 {
			onReady = func(timed bool) {
				at := time.Now().Add(g.lead)
				if timed {
					begin(at)
				}
				// A send that fails is a broken pipe: the step fails on it.
				_, _ = g.procs[0].send(wire.Request{Cmd: wire.CmdStart, Start: at})
			}
		}
		ev, err := g.procs[0].callStep(ctx, wire.Request{Cmd: wire.CmdStep, Step: &st, Profile: profile}, func(p wire.Progress) {
			onProgress(p.Done, p.Total)
		}, onReady)
		if ev.Step != nil && why != "" {
			ev.Step.Unsplit = why
		}
		return ev.Step, ev.Profiles, err
	}
	n := len(g.procs)
	if n == 1 {
		return single("")
	}
	if err := workload.CanSplit(st); err != nil {
		return single(err.Error())
	}

	// A failure of one worker stops the others: they are cancelled and
	// answer with what they measured.
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu              sync.Mutex
		ready, finished int
		done            = make([]int64, n)
		total           int64
		barrierErr      error
		evs             = make([]wire.Event, n)
		errs            = make([]error, n)
		wg              sync.WaitGroup
	)
	// stuck fails the step when every worker still running waits at a
	// barrier that a finished one will never reach. Called under mu.
	stuck := func() {
		if ready > 0 && ready+finished == n && barrierErr == nil {
			barrierErr = fmt.Errorf("the workers of step %s disagree: some finished while others wait at a barrier", st.Phase)
			cancel(barrierErr)
		}
	}
	release := func(timed bool) {
		at := time.Now().Add(g.lead)
		if timed {
			begin(at)
		}
		for i, p := range g.procs {
			if _, err := p.send(wire.Request{Cmd: wire.CmdStart, Start: at}); err != nil {
				cancel(fmt.Errorf("worker %d (%s): %w", i, p.host, err))
			}
		}
	}
	for i, p := range g.procs {
		part := st
		part.Part, part.Parts = i, n
		wg.Add(1)
		go func(i int, p *proc) {
			defer wg.Done()
			evs[i], errs[i] = p.callStep(stepCtx, wire.Request{Cmd: wire.CmdStep, Step: &part, Profile: profile},
				func(pr wire.Progress) {
					mu.Lock()
					done[i], total = pr.Done, pr.Total
					var sum int64
					for _, d := range done {
						sum += d
					}
					t := total
					mu.Unlock()
					onProgress(sum, t)
				},
				func(timed bool) {
					mu.Lock()
					ready++
					all := ready == n
					if all {
						ready = 0
					}
					mu.Unlock()
					if all {
						release(timed)
					}
				})
			mu.Lock()
			finished++
			stuck()
			mu.Unlock()
			if errs[i] != nil {
				cancel(fmt.Errorf("worker %d (%s): %w", i, p.host, errs[i]))
			}
		}(i, p)
	}
	wg.Wait()

	parts := make([]*results.Step, n)
	hosts := make([]string, n)
	pids := make([]int, n)
	for i, p := range g.procs {
		parts[i], hosts[i], pids[i] = evs[i].Step, p.host, p.hello.PID
	}
	// The first cause: the worker that failed first, or the barrier, or
	// the caller's own cancellation (then no error, the parts are partial).
	var err error
	if c := context.Cause(stepCtx); c != nil && ctx.Err() == nil {
		err = c
	}
	for i := range parts {
		if parts[i] == nil {
			if err == nil {
				err = fmt.Errorf("worker %d (%s) sent no result", i, hosts[i])
			}
			return nil, evs[0].Profiles, err
		}
	}
	m, merr := mergeParts(parts, hosts, pids)
	if merr != nil {
		if err == nil {
			err = merr
		}
		return nil, evs[0].Profiles, err
	}
	return m, evs[0].Profiles, err
}
