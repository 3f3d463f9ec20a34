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
	r := &groupStep{g: g, ctx: ctx, st: st, profile: profile, onProgress: onProgress, onStart: onStart}
	if len(g.procs) == 1 {
		return r.single("")
	}
	if err := workload.CanSplit(st); err != nil {
		return r.single(err.Error())
	}
	return r.split()
}

// groupStep is one step under way on a group: what it runs, and whom it
// tells of its progress and of the start of its timed part.
type groupStep struct {
	g          *group
	ctx        context.Context
	st         workload.Step
	profile    []string
	onProgress func(done, total int64)
	onStart    func(at time.Time)
	started    sync.Once
}

// begin tells onStart, once, the instant the timed part begins.
func (r *groupStep) begin(at time.Time) {
	r.started.Do(func() {
		if r.onStart != nil {
			r.onStart(at)
		}
	})
}

// single runs the step on the first worker alone; why, if not empty, is
// why it did not split.
func (r *groupStep) single(why string) (*results.Step, map[string][]byte, error) {
	g := r.g
	var onReady func(bool)
	if len(r.st.Faults) > 0 {
		onReady = func(timed bool) {
			at := time.Now().Add(g.lead)
			if timed {
				r.begin(at)
			}
			// A send that fails is a broken pipe: the step fails on it.
			_, _ = g.procs[0].send(wire.Request{Cmd: wire.CmdStart, Start: at})
		}
	}
	ev, err := g.procs[0].callStep(r.ctx, wire.Request{Cmd: wire.CmdStep, Step: &r.st, Profile: r.profile}, func(p wire.Progress) {
		r.onProgress(p.Done, p.Total)
	}, onReady)
	if ev.Step != nil && why != "" {
		ev.Step.Unsplit = why
	}
	return ev.Step, ev.Profiles, err
}

// splitStep is a step split over every worker of the group: what they
// share while it runs. A failure of one worker stops the others: they
// are cancelled (cancel ends stepCtx) and answer with what they measured.
type splitStep struct {
	*groupStep
	stepCtx context.Context
	cancel  context.CancelCauseFunc

	mu              sync.Mutex
	ready, finished int
	done            []int64
	total           int64
	barrierErr      error
	evs             []wire.Event
	errs            []error
}

// split runs the step on every worker at once, each with its part, and
// merges their results.
func (r *groupStep) split() (*results.Step, map[string][]byte, error) {
	n := len(r.g.procs)
	stepCtx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	s := &splitStep{groupStep: r, stepCtx: stepCtx, cancel: cancel,
		done: make([]int64, n), evs: make([]wire.Event, n), errs: make([]error, n)}
	var wg sync.WaitGroup
	for i, p := range r.g.procs {
		wg.Add(1)
		go func(i int, p *proc) {
			defer wg.Done()
			s.run(i, p)
		}(i, p)
	}
	wg.Wait()
	return s.merge()
}

// run runs worker i's part of the step.
func (s *splitStep) run(i int, p *proc) {
	n := len(s.g.procs)
	part := s.st
	part.Part, part.Parts = i, n
	s.evs[i], s.errs[i] = p.callStep(s.stepCtx, wire.Request{Cmd: wire.CmdStep, Step: &part, Profile: s.profile},
		func(pr wire.Progress) { s.progress(i, pr) },
		s.atBarrier)
	s.mu.Lock()
	s.finished++
	s.stuck()
	s.mu.Unlock()
	if s.errs[i] != nil {
		s.cancel(fmt.Errorf("worker %d (%s): %w", i, p.host, s.errs[i]))
	}
}

// progress takes worker i's progress and tells the sum of all.
func (s *splitStep) progress(i int, pr wire.Progress) {
	s.mu.Lock()
	s.done[i], s.total = pr.Done, pr.Total
	var sum int64
	for _, d := range s.done {
		sum += d
	}
	t := s.total
	s.mu.Unlock()
	s.onProgress(sum, t)
}

// atBarrier counts a worker ready at a barrier, and releases them all
// once every one is.
func (s *splitStep) atBarrier(timed bool) {
	s.mu.Lock()
	s.ready++
	all := s.ready == len(s.g.procs)
	if all {
		s.ready = 0
	}
	s.mu.Unlock()
	if all {
		s.release(timed)
	}
}

// stuck fails the step when every worker still running waits at a
// barrier that a finished one will never reach. Called under mu.
func (s *splitStep) stuck() {
	if s.ready > 0 && s.ready+s.finished == len(s.g.procs) && s.barrierErr == nil {
		s.barrierErr = fmt.Errorf("the workers of step %s disagree: some finished while others wait at a barrier", s.st.Phase)
		s.cancel(s.barrierErr)
	}
}

// release starts every worker waiting at the barrier, at one instant
// far enough ahead for the request to reach them all.
func (s *splitStep) release(timed bool) {
	at := time.Now().Add(s.g.lead)
	if timed {
		s.begin(at)
	}
	for i, p := range s.g.procs {
		if _, err := p.send(wire.Request{Cmd: wire.CmdStart, Start: at}); err != nil {
			s.cancel(fmt.Errorf("worker %d (%s): %w", i, p.host, err))
		}
	}
}

// merge merges the workers' parts (mergeParts), or says why it cannot.
func (s *splitStep) merge() (*results.Step, map[string][]byte, error) {
	n := len(s.g.procs)
	parts := make([]*results.Step, n)
	hosts := make([]string, n)
	pids := make([]int, n)
	for i, p := range s.g.procs {
		parts[i], hosts[i], pids[i] = s.evs[i].Step, p.host, p.hello.PID
	}
	// The first cause: the worker that failed first, or the barrier, or
	// the caller's own cancellation (then no error, the parts are partial).
	var err error
	if c := context.Cause(s.stepCtx); c != nil && s.ctx.Err() == nil {
		err = c
	}
	for i := range parts {
		if parts[i] == nil {
			if err == nil {
				err = fmt.Errorf("worker %d (%s) sent no result", i, hosts[i])
			}
			return nil, s.evs[0].Profiles, err
		}
	}
	m, merr := mergeParts(parts, hosts, pids)
	if merr != nil {
		if err == nil {
			err = merr
		}
		return nil, s.evs[0].Profiles, err
	}
	return m, s.evs[0].Profiles, err
}
