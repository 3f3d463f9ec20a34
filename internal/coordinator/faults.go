package coordinator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"storebench/internal/event"
	"storebench/internal/fault"
	"storebench/internal/measure/procstat"
	"storebench/internal/powerfs"
	"storebench/internal/results"
	"storebench/internal/server"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
)

// attachFaults decodes entry e's fault actions and gives each step the
// actions of its phase. A phase that is not one of the workload's is the
// study's error.
func attachFaults(s *study.Study, e study.Entry, steps []workload.Step) error {
	actions, err := fault.Decode(s, e)
	if err != nil || len(actions) == 0 {
		return err
	}
	phases := map[string]bool{}
	for _, st := range steps {
		phases[st.Phase] = true
	}
	for i, a := range actions {
		if !phases[a.Phase] {
			var known []string
			for _, st := range steps {
				if !contains(known, st.Phase) {
					known = append(known, st.Phase)
				}
			}
			return &study.Error{File: s.File, Line: study.FieldLine(*e.Faults.Content[i], "phase"), Field: fmt.Sprintf("workloads.%s.faults[%d].phase", e.Name, i),
				Msg: fmt.Sprintf("%q is not a phase of %s (phases: %v)", a.Phase, e.Name, known)}
		}
	}
	var lengths workload.Lengther
	if w, err := workload.Lookup(e.Name); err == nil {
		lengths, _ = w.(workload.Lengther)
	}
	for j := range steps {
		steps[j].Faults = fault.Of(actions, steps[j].Phase)
		if lengths == nil || len(steps[j].Faults) == 0 {
			continue
		}
		// A fault that cannot strike inside its phase (its instant, or
		// the end of the range its instant is drawn from, past the
		// phase's known length) would strike after the phase's writes,
		// with nothing in flight, and be reported as a fault under load.
		length, how := lengths.Length(steps[j])
		if length <= 0 {
			continue
		}
		for i, a := range actions {
			if a.Phase != steps[j].Phase {
				continue
			}
			field, past := "at", a.Offset() >= length
			if a.Until > 0 {
				field, past = "until", time.Duration(a.Until) > length
			}
			if past {
				return &study.Error{File: s.File, Line: study.FieldLine(*e.Faults.Content[i], field), Field: fmt.Sprintf("workloads.%s.faults[%d].%s", e.Name, i, field),
					Msg: fmt.Sprintf("%s cannot strike inside phase %s N=%s, which lasts %s (%s): it would strike after the phase's writes, with nothing in flight; give an instant before %s", a, a.Phase, study.FormatCount(steps[j].N), length.Round(time.Millisecond), how, length.Round(time.Millisecond))}
			}
		}
	}
	return nil
}

// unstruck says why a step's result does not measure one of its fault
// actions ("": each struck inside the step's timed part): its instant
// came after the phase ended, so that it was dropped when the step ended
// or (a workload that waits for its faults before its read-back) struck
// with no write in flight. A length known in advance refused it when the
// plan was made (attachFaults); this is the check of the others.
func unstruck(st workload.Step, res *results.Step) string {
	for _, a := range st.Faults {
		if a.Offset().Seconds() >= res.Seconds {
			return fmt.Sprintf("fault %s never struck: phase %s ended at %.3fs", a, st.Phase, res.Seconds)
		}
	}
	return ""
}

// faultsOn gives the steps only the fault actions that apply to target
// name (fault.On); the plan's steps, shared by every target, are copied
// only when one changes.
func faultsOn(steps []workload.Step, name string) []workload.Step {
	var out []workload.Step
	for j, st := range steps {
		on := fault.On(st.Faults, name)
		if len(on) == len(st.Faults) {
			continue
		}
		if out == nil {
			out = append([]workload.Step(nil), steps...)
		}
		out[j].Faults = on
	}
	if out == nil {
		return steps
	}
	return out
}

// checkCrashTargets refuses, before anything starts, a crash action
// (fault.Kill9, fault.PowerLoss) on a target storebench does not run as
// a single server of its own (an embedded engine, a server named by URI,
// a cluster), and a power loss where powerfs cannot mount; and a step
// that crashes the target itself (workload.TargetCrasher: the durability
// workload's, `--crash K`) on a server named by URI, which its trials
// would not touch: they crash a server of their own making, whose losses
// would be reported under the URI's name.
//
// Node numbers are checked here too, against the node count the target's
// options give (a single server has 1), and node actions (stop, kill,
// pause, restart) on a target that is not a cluster storebench starts.
func checkCrashTargets(info target.Info, uri string, opts map[string]string, steps []workload.Step) error {
	for _, st := range steps {
		if uri != "" && st.CannotRunOn(info.Provides) == "" {
			if w, err := workload.Lookup(st.Workload); err == nil {
				if c, ok := w.(workload.TargetCrasher); ok {
					if crash := c.CrashesTarget(st); crash != "" {
						return fmt.Errorf("%s %s: %s is named by URI (%s); the %s workload crashes the target's server, and storebench crashes only a server it starts itself (leave out the uri)", st.Workload, crash, info.Name, uri, st.Workload)
					}
				}
			}
		}
		for _, a := range st.Faults {
			switch {
			case !a.Crash():
			case info.Embedded():
				return fmt.Errorf("phase %s: %s: an embedded engine runs inside the worker process; its crashes are the durability workload's: storebench run durability", st.Phase, a)
			case uri != "":
				return fmt.Errorf("phase %s: %s: %s is named by URI (%s); storebench crashes only a server it starts itself (leave out the uri)", st.Phase, a, info.Name, uri)
			case server.IsCluster(info.Server):
				return fmt.Errorf("phase %s: %s: %s is a cluster and a crash takes a single server; use kill and restart on a cluster's nodes", st.Phase, a, info.Name)
			case a.Node > 1:
				return fmt.Errorf("phase %s: %s node %d: %s is a single server, its only node is 1", st.Phase, a, a.Node, info.Name)
			case a.Action == fault.PowerLoss:
				if why := powerfs.Unavailable(); why != "" {
					return fmt.Errorf("phase %s: %s needs the power-loss file system: %s", st.Phase, a, why)
				}
			}
			if a.Crash() {
				continue
			}
			if info.Embedded() || uri != "" || !server.IsCluster(info.Server) {
				return fmt.Errorf("phase %s: %s: node actions need a cluster storebench starts itself (cassandra-cluster, redis-cluster), not %s", st.Phase, a, info.Name)
			}
			if n := server.NodeCount(info.Server, opts); n > 0 && a.Node > n {
				return fmt.Errorf("phase %s: %s: %s has %d nodes (1..%d)", st.Phase, a, info.Name, n, n)
			}
		}
	}
	return nil
}

// checkFaultTargets refuses, before any step runs, node actions on a
// target that is not a cluster storebench runs, or on a node it does not
// have, and crash actions on a cluster.
func checkFaultTargets(srv *managed, steps []workload.Step) error {
	for _, st := range steps {
		for _, a := range st.Faults {
			cluster := srv != nil && len(srv.inst.Nodes) > 0
			switch {
			case a.Crash() && cluster:
				return fmt.Errorf("phase %s: %s: a crash takes a single server; use kill and restart on a cluster's nodes", st.Phase, a)
			case a.Crash() && (srv == nil || srv.crash == nil):
				return fmt.Errorf("phase %s: %s needs a server storebench starts itself", st.Phase, a)
			case a.Crash():
			case !cluster:
				return fmt.Errorf("phase %s has fault actions, which need a cluster storebench starts itself (cassandra-cluster, redis-cluster), not this target", st.Phase)
			case a.Node > len(srv.inst.Nodes):
				return fmt.Errorf("phase %s: %s: the cluster has %d nodes", st.Phase, a, len(srv.inst.Nodes))
			}
		}
	}
	return nil
}

// faultRun carries out one step's actions on the cluster's nodes while
// the worker runs the step. The actions' offsets count from the start of
// the step's timed part, which the worker reaches behind a barrier
// (begin); until then nothing happens.
type faultRun struct {
	// schedule ends the waits for actions still to come (the step is
	// over); act is what an action under way runs on: the run's own
	// context, so that a restart half done when the step ends is
	// finished, not abandoned with the node half up.
	schedule context.Context
	cancel   context.CancelFunc
	act      context.Context
	srv      *managed
	start    chan time.Time
	wg       sync.WaitGroup
	mu       sync.Mutex
	events   []results.Event
}

// startFaults prepares the step's actions; they are timed from the
// instant given to begin.
func startFaults(ctx context.Context, srv *managed, actions []fault.Action, emit func(event.Event) error, name string) *faultRun {
	fr := &faultRun{act: ctx, srv: srv, start: make(chan time.Time, 1)}
	fr.schedule, fr.cancel = context.WithCancel(ctx)
	if len(actions) == 0 {
		return fr
	}
	// One goroutine per node, so that a node's actions keep their order
	// (a kill, then its restart) while nodes act independently; a single
	// server's crashes (each with its restart) are "node" 0.
	byNode := map[int][]fault.Action{}
	for _, a := range actions {
		idx := a.Node
		if a.Crash() {
			idx = 0
		}
		byNode[idx] = append(byNode[idx], a)
	}
	t0 := make(chan struct{})
	var at time.Time
	go func() {
		select {
		case at = <-fr.start:
			close(t0)
		case <-fr.schedule.Done():
		}
	}()
	for idx, acts := range byNode {
		var node *server.Node
		if idx > 0 {
			node = srv.inst.Nodes[idx-1]
		}
		fr.wg.Add(1)
		go func() {
			defer fr.wg.Done()
			select {
			case <-t0:
			case <-fr.schedule.Done():
				return
			}
			for i, a := range acts {
				t := time.NewTimer(time.Until(at.Add(a.Offset())))
				select {
				case <-fr.schedule.Done():
					t.Stop()
					// The step ended first: a node this step took down
					// is still brought back by its restart, now.
					for _, b := range acts[i:] {
						if b.Action == fault.Restart && node != nil && node.PID() == 0 {
							fr.do(node, b, emit, name)
							break
						}
					}
					return
				case <-t.C:
				}
				fr.do(node, a, emit, name)
			}
		}()
	}
	return fr
}

// begin starts the clock of the actions (the first call counts).
func (fr *faultRun) begin(at time.Time) {
	select {
	case fr.start <- at:
	default:
	}
}

// do takes action a on node (nil: a crash of the single server).
func (fr *faultRun) do(node *server.Node, a fault.Action, emit func(event.Event) error, name string) {
	ctx := fr.act
	ev := results.Event{Time: time.Now(), Action: a.Action, Node: a.Node}
	if node != nil {
		ev.NodeName = node.Name + " " + node.Addr
	} else {
		ev.NodeName = fmt.Sprintf("%s pid %d", fr.srv.inst.Name, fr.srv.inst.PID)
	}
	var err error
	switch a.Action {
	case fault.Kill9, fault.PowerLoss:
		// The crash, then the restart on the same data: one event,
		// which took as long as the server was away.
		if err = fr.srv.crashAndRestart(ctx, a.Action); err == nil {
			ev.NodeName += fmt.Sprintf(", back as pid %d", fr.srv.inst.PID)
		}
	case fault.Stop:
		err = node.Stop(ctx, server.DefaultStopTimeout)
	case fault.Kill:
		err = node.Kill()
	case fault.Pause:
		if err = node.Pause(); err == nil {
			fr.record(ev, nil, emit, name)
			t := time.NewTimer(a.PauseFor())
			select {
			case <-fr.schedule.Done():
			case <-t.C:
			}
			t.Stop()
			// Resumed even when the step ended first: a stopped process
			// must not stay frozen.
			ev = results.Event{Time: time.Now(), Action: "resume", Node: a.Node, NodeName: ev.NodeName}
			err = node.Resume()
		}
	case fault.Restart:
		if err = node.Restart(ctx); err == nil {
			err = fr.srv.placeAgain(node)
		}
	}
	ev.TookSeconds = time.Since(ev.Time).Seconds()
	fr.record(ev, err, emit, name)
}

func (fr *faultRun) record(ev results.Event, err error, emit func(event.Event) error, name string) {
	if err != nil {
		ev.Error = err.Error()
	}
	fr.mu.Lock()
	fr.events = append(fr.events, ev)
	fr.mu.Unlock()
	msg := fmt.Sprintf("fault: %s %s", ev.Action, ev.NodeName)
	if ev.TookSeconds > 0.05 {
		msg += fmt.Sprintf(" (took %.1fs)", ev.TookSeconds)
	}
	if err != nil {
		msg += ": " + err.Error()
	}
	_ = emit(event.Notice{Target: name, Text: msg})
}

// finish drops the actions whose time has not come (a step that ended
// early), except the restarts of nodes still down, waits for the actions
// under way to complete, and returns the events in time order.
func (fr *faultRun) finish() []results.Event {
	fr.cancel()
	fr.wg.Wait()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	out := append([]results.Event(nil), fr.events...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Time.Before(out[j-1].Time); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// restoreNodes brings back every node that is down or paused after a
// step whose faults were cut short, so that the next step starts on the
// whole cluster (a single server a crash left down: its restart).
func restoreNodes(ctx context.Context, srv *managed) error {
	if srv == nil {
		return nil
	}
	if srv.crash != nil && !server.Alive(srv.inst.PID) {
		if err := srv.crash.Restart(ctx); err != nil {
			return err
		}
		srv.inst = srv.crash.Instance()
		if err := srv.place(); err != nil {
			return err
		}
	}
	for _, n := range srv.inst.Nodes {
		if n.PID() == 0 {
			if err := n.Restart(ctx); err != nil {
				return err
			}
			if err := srv.placeAgain(n); err != nil {
				return err
			}
		} else {
			_ = n.Resume()
		}
	}
	return nil
}

// nodeSnapshots samples every node's process tree (a node that is down
// samples as zero).
func (m *managed) nodeSnapshots() []nodeSample {
	if m == nil || len(m.inst.Nodes) == 0 {
		return nil
	}
	out := make([]nodeSample, len(m.inst.Nodes))
	for i, n := range m.inst.Nodes {
		out[i].pid = n.PID()
		if out[i].pid != 0 {
			out[i].snap, _ = procstat.Tree(out[i].pid)
		} else {
			out[i].snap = procstat.Snapshot{At: time.Now()}
		}
	}
	return out
}

type nodeSample struct {
	pid  int
	snap procstat.Snapshot
}

// nodeResources is each node's RSS, CPU and disk over a step, and their
// sum. A node restarted during the step is a new process: its CPU counts
// from its start.
func (m *managed) nodeResources(before []nodeSample) (per []results.NodeResources, total procstat.Snapshot, totalBefore procstat.Snapshot) {
	after := m.nodeSnapshots()
	for i, n := range m.inst.Nodes {
		if i >= len(before) || i >= len(after) {
			break
		}
		b, a := before[i].snap, after[i].snap
		if before[i].pid != after[i].pid {
			b = procstat.Snapshot{At: b.At}
		}
		r := results.NodeResources{Name: n.Name, Addr: n.Addr, Role: n.Role, PID: after[i].pid,
			RSSBytes: a.RSSBytes, PeakRSSBytes: a.PeakRSSBytes, CPUPercent: procstat.CPUPercent(b, a)}
		r.DiskAllocated, r.DiskApparent, _ = procstat.DiskUsage(n.DataDir)
		per = append(per, r)
		total = addSnap(total, a, false)
		totalBefore = addSnap(totalBefore, b, false)
	}
	return per, total, totalBefore
}

// clusterResources puts each node's resources on the step and makes the
// server's figures the nodes' sum (the process tree of node 1 alone is
// what managed.resources sampled).
func clusterResources(res *results.Step, srv *managed, before []nodeSample) {
	per, after, b := srv.nodeResources(before)
	res.Nodes = per
	r := res.ServerResources
	r.Before, r.After = b, after
	r.Before.At = before[0].snap.At
	r.CPUPercent = procstat.CPUPercent(r.Before, r.After)
}

// eventsOf dates the events from the step's start.
func eventsOf(events []results.Event, started time.Time) []results.Event {
	for i := range events {
		events[i].OffsetS = events[i].Time.Sub(started).Seconds()
	}
	return events
}
