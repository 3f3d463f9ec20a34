package coordinator

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"storebench/internal/event"
	"storebench/internal/machine"
	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// A Slot is one target run of a plan: a study target, on one machine
// shape when the study names machines (each target runs once per
// machine, on a fresh worker or server with fresh data), else as it is.
type Slot struct {
	// Target is the index of the study's target (Plan.Targets, Plan.NA).
	Target int
	// Name is the run's name for it: the target's, with "@" and the
	// machine's title when it runs on one (rocksdb@cpus=0.5,memory=256MiB).
	Name string
	// Machine is the shape, nil for none.
	Machine *machine.Shape
}

// slots is the plan's target runs: Slots, or one per target when the
// plan was built without them.
func (p *Plan) slots(s *study.Study) []Slot {
	if len(p.Slots) > 0 {
		return p.Slots
	}
	out := make([]Slot, len(s.Targets))
	for i, t := range s.Targets {
		out[i] = Slot{Target: i, Name: t.Name}
	}
	return out
}

// machinesOf parses the study's machines: list (or --machine's), each a
// shape as machine.Parse reads it, each once, a budget given at a seed's
// size (at_n) scaled to the ladder's largest size.
func machinesOf(s *study.Study) ([]machine.Shape, error) {
	var out []machine.Shape
	seen := map[string]bool{}
	for k, m := range s.Machines {
		field := fmt.Sprintf("machines[%d]", k)
		sh, err := machine.Parse(m)
		if err != nil {
			return nil, &study.Error{File: s.File, Line: s.Line(field), Field: field, Msg: err.Error()}
		}
		if seen[sh.Title()] {
			return nil, &study.Error{File: s.File, Line: s.Line(field), Field: field, Msg: fmt.Sprintf("machine %s is given twice", sh.Title())}
		}
		seen[sh.Title()] = true
		// A budget given at a seed's size holds the seed's ratio at the
		// top of this run's ladder (the target's machine then says the
		// budget enforced; the study file keeps its derivation).
		top := 0.0
		for _, n := range s.Ladder {
			top = max(top, float64(n))
		}
		if sh, err = sh.Scaled(top); err != nil {
			return nil, &study.Error{File: s.File, Line: s.Line(field), Field: field, Msg: err.Error()}
		}
		out = append(out, sh)
	}
	return out, nil
}

// planSlots fills p.Slots: every target once per machine, target by
// target, or once each when there are no machines.
func planSlots(s *study.Study, p *Plan) error {
	shapes, err := machinesOf(s)
	if err != nil {
		return err
	}
	p.Slots = nil
	for i, t := range s.Targets {
		if len(shapes) == 0 {
			p.Slots = append(p.Slots, Slot{Target: i, Name: t.Name})
			continue
		}
		for k := range shapes {
			sh := shapes[k]
			p.Slots = append(p.Slots, Slot{Target: i, Name: t.Name + "@" + sh.Title(), Machine: &sh})
		}
	}
	return nil
}

// dataName is a slot's data directory name: its name with the
// characters a server's configuration might read otherwise ("=", ",",
// "@") replaced.
func dataName(name string) string {
	return strings.NewReplacer("@", "-on-", "=", "-", ",", "_").Replace(name)
}

// machineWhyNot says why the target cannot run on its machine before
// anything starts ("" when it may): a server named by URI is not
// storebench's to limit; an embedded engine on another host is not this
// machine's to limit.
func (r *targetRun) machineWhyNot() string {
	title := r.shape.Title()
	if r.uri != "" {
		return fmt.Sprintf("machine %s cannot be enforced on a server named by URI: storebench did not start it, so it cannot place its processes under the limits", title)
	}
	if r.info.Embedded() {
		for _, h := range r.s.Placement() {
			if !h.Local {
				return fmt.Sprintf("machine %s cannot be enforced on a worker on another host (%s): the limits are this machine's cgroups", title, h.Raw)
			}
		}
	}
	return ""
}

// machineGroup creates the target's machine group, before anything of
// it starts. On false the target's steps are n/a (the reason said) or
// it failed.
func (r *targetRun) machineGroup(slot int) bool {
	if why := r.machineWhyNot(); why != "" {
		r.allNA(why)
		return false
	}
	r.stepServersNA()
	runID := fmt.Sprintf("%s-%s", filepath.Base(r.runDir), strconv.Itoa(slot))
	// A copy: a server's group may get a cpuset of its own (placement.go).
	g, err := machine.New(r.groupShape(), runID, r.dataRoot())
	if errors.Is(err, machine.ErrNotEnforceable) {
		r.allNA(err.Error())
		return false
	}
	if err != nil {
		r.failed("", fmt.Errorf("machine %s: %w", r.shape.Title(), err))
		return false
	}
	r.mg = g
	return true
}

// closeMachine removes the target's machine group (a cluster's: every
// node's) once its processes have stopped (also after Ctrl-C:
// runTarget's teardown).
func (r *targetRun) closeMachine() {
	gs := r.machineGroups()
	if r.mg != nil && !slices.Contains(gs, r.mg) {
		gs = append(gs, r.mg)
	}
	for _, g := range gs {
		if err := g.Close(); err != nil {
			r.o.notice(r.t.Name, "warning: "+err.Error())
		}
	}
}

// allNA makes every step the target would have run n/a with why: a
// shape that cannot be enforced is never run without its limits.
func (r *targetRun) allNA(why string) {
	for j, st := range r.steps {
		if !r.runnable[j] {
			continue
		}
		r.runnable[j] = false
		r.tr.NA = append(r.tr.NA, results.NA{Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels, Status: "n/a", Reason: why})
		_ = r.o.emit(event.StepNA{Target: r.t.Name, Step: stepOf(st), Reason: why})
	}
}

// placeWorker puts an embedded engine's worker (the whole target) in the
// machine group, right after it started and before it opened the engine.
// A server target's worker is the client: it stays outside.
func (r *targetRun) placeWorker() error {
	if r.mg == nil || !r.info.Embedded() {
		return nil
	}
	for _, p := range r.g.procs {
		if err := r.mg.Add(p.cmd.Process.Pid); err != nil {
			return err
		}
	}
	return r.addOwnMemory()
}

// addOwnMemory, on a memory=SIZE shape, measures storebench's own memory
// in the embedded engine's worker (the Go runtime, the load generator)
// now that the worker joined the group and before it opens the engine,
// and raises the group's limit by it, so that SIZE is the engine's. The
// worker waits for its open request meanwhile: the answer to a sample
// request shows it has run since it joined and is idle, no sleeping.
//
// A cache= shape needs nothing of this: its limit is set at every step
// from the group's memory outside the page cache (the engine's and
// storebench's together) plus the budget (machine.CacheHold), so
// storebench's own memory never takes from the page cache budget.
func (r *targetRun) addOwnMemory() error {
	if r.shape.Memory == 0 {
		return nil
	}
	if _, err := r.g.each(wire.Request{Cmd: wire.CmdSample}); err != nil {
		return fmt.Errorf("machine %s: the worker did not answer before its own memory was measured: %w", r.shape.Title(), err)
	}
	_, err := r.mg.AddOwnMemory()
	return err
}

// placeServer puts the managed server's whole process tree in the
// machine group, right after it started (server.Server.Start returns once
// it answers: what it was charged for before stays outside the limit,
// and the target's settings say so). Each node of a cluster goes in a
// group of its own (clusterGroups).
func (r *targetRun) placeServer() error {
	if r.mg == nil || r.srv == nil {
		return nil
	}
	r.srv.mg = r.mg
	if err := r.clusterGroups(); err != nil {
		return err
	}
	return r.srv.place()
}

// place puts the server's processes in its machine group, each node of
// a cluster in its own.
func (m *managed) place() error {
	if m.mg == nil || m.inst == nil {
		return nil
	}
	if len(m.inst.Nodes) > 0 {
		for i := range m.inst.Nodes {
			if err := m.placeNode(i); err != nil {
				return err
			}
		}
		return nil
	}
	return m.mg.AddTree(m.inst.PID)
}

// machineNotes are the target's settings that say where its sides ran.
func (r *targetRun) machineNotes() {
	if r.mg == nil {
		return
	}
	if r.tr.Settings == nil {
		r.tr.Settings = map[string]string{}
	}
	r.tr.Settings["machine"] = r.shape.String()
	if r.info.Embedded() {
		r.tr.Settings["machine_placement"] = "the worker (engine and load generator in one process) joined the machine's group as it started, before the engine opened; the coordinator stays outside"
	} else {
		r.tr.Settings["machine_placement"] = "the server's process tree joined the machine's group right after it started and answered; memory it was charged for before joining stays outside the limit; the client worker and the coordinator stay outside"
		r.clusterNotes(r.tr.Settings)
	}
	r.placementNotes()
	if own := r.mg.Own(); own.Limit > 0 {
		r.tr.Settings["machine_storebench_memory"] = ownMemoryNote(own, r.shape.Memory)
	}
	if d := r.mg.Disk(); d != "" {
		r.tr.Settings["machine_disk"] = d
	}
}

// ownMemoryNote says storebench's own memory in an embedded engine's
// worker, added to the limit (machine_storebench_memory): what the group
// was charged for with the engine closed, and what the worker held then,
// charged in the group or, where the kernel moved no charges as it
// joined, outside it.
func ownMemoryNote(own machine.OwnMemory, shapeMemory int64) string {
	s := fmt.Sprintf("storebench's own memory in the worker, measured with the engine closed: %s as the group's limit counts it (%s anonymous, %s page cache, %s kernel memory and charge the kernel holds ahead per CPU), added to the limit: %s (memory=%s is the engine's)",
		human(own.Bytes), human(own.Anon), human(own.Cache), human(max(own.Bytes-own.Anon-own.Cache, 0)), human(own.Limit), machine.FormatSize(shapeMemory))
	held := fmt.Sprintf("the worker then held %s resident (its RSS, the executable's mapped pages included)", human(own.Resident))
	if own.Moved {
		return s + "; " + held + ", its charge moved into the group as it joined"
	}
	return s + "; " + held + ": what it was charged for before it joined the group stays outside the group and its limit (this kernel moves no charge with a process: memory.move_charge_at_immigrate)"
}

// machineBefore is the group's counters as a step starts (its peak
// memory started over), nil without a group. fresh: the step starts on an
// empty database.
func (r *targetRun) machineBefore(fresh bool) *machine.Stats {
	if r.mg == nil {
		return nil
	}
	r.setCacheLimit(fresh)
	for _, g := range r.machineGroups() {
		_ = g.ResetPeak()
	}
	st, per, err := r.nodeStats()
	if err != nil {
		r.o.notice(r.t.Name, "warning: "+err.Error())
		return nil
	}
	r.machineAt = time.Now()
	if r.srv != nil {
		r.srv.nodeBefore = per
	}
	return &st
}

// setCacheLimit, on a shape that keeps a ratio of page cache to data
// (cache=R), holds the group's page cache through the step to R × the
// target's data on disk (machine.CacheHold: measured at the start, then
// every second); on a cluster, each node's group to R × that node's data
// (holdNodes). A step that creates its database (fresh) runs with no
// limit: the engine's allocations as it opens and loads an empty store
// find no page cache to reclaim, and the kernel fails the ones it
// charges to the group at once (file and mapping bookkeeping: ENOMEM,
// a C++ engine's bad_alloc) rather than wait for the limit to follow;
// its metrics say so (machine_data_bytes_at_start 0, no limit). A limit
// the kernel refuses is a warning, and the step runs without it.
func (r *targetRun) setCacheLimit(fresh bool) {
	r.cacheLimit, r.hiLimit, r.hiBudget = nil, 0, 0
	if !r.shape.CacheShape() {
		return
	}
	// A fixed budget (cache=SIZE) holds from the first step: it leaves
	// the engine that budget of room as it opens.
	fresh = fresh && r.shape.Cache != 0
	if r.srv != nil && len(r.srv.nodeMG) > 0 {
		r.holdNodes(fresh)
		return
	}
	// The target's data: an embedded engine's directory, or the managed
	// server's (r.dir is cleared once a server started: its workers
	// hold no data).
	dir := r.dir
	if r.srv != nil {
		dir = r.srv.inst.DataDir
	}
	h, err := r.mg.HoldCache(dataSize(dir, fresh))
	if err != nil {
		r.o.notice(r.t.Name, "warning: "+err.Error())
		return
	}
	r.hold = h
}

// dataSize is a cache hold's measure of the data: the bytes of the
// files under dir (their apparent size), 0 on a fresh step.
func dataSize(dir string, fresh bool) func() int64 {
	return func() int64 {
		if fresh {
			return 0
		}
		if _, apparent, err := procstat.DiskUsage(dir); err == nil {
			return apparent
		}
		return 0
	}
}

// endHold ends the step's cache hold (the limit is lifted until the next
// step's), keeping the limits it set for the step's metrics: on a
// cluster, each node's (endNodeHolds).
func (r *targetRun) endHold() {
	r.endNodeHolds()
	if r.hold == nil {
		return
	}
	first, hi, hiBudget, err := r.hold.Stop()
	r.hold = nil
	r.cacheLimit, r.hiLimit, r.hiBudget = &first, hi, hiBudget
	if err != nil {
		r.o.notice(r.t.Name, "warning: "+err.Error())
	}
}

// machineMetrics adds what the machine group used over the step (from
// before) to the step's metrics, prefixed machine_: on a cluster, the
// nodes' groups together, and each node's as machine_node<i>_*. Its CPU
// in cores is over the time between the two readings of the counters
// (machineBefore's and this one's, right after the step), not the
// step's wall time: a step of a few milliseconds beside a server's
// background work would otherwise show more cores than the machine has.
func (r *targetRun) machineMetrics(res *results.Step, before *machine.Stats) {
	if r.mg == nil || before == nil || res == nil {
		return
	}
	after, per, err := r.nodeStats()
	wall := time.Since(r.machineAt)
	r.endHold()
	if err != nil {
		r.o.notice(r.t.Name, "warning: "+err.Error())
		return
	}
	if res.Metrics == nil {
		res.Metrics = map[string]float64{}
	}
	m := res.Metrics
	if r.srv != nil {
		nodeMetrics(m, r.srv.nodeBefore, per, wall.Seconds())
	}
	if after.HasCPU {
		cpu := float64(after.CPUNs-before.CPUNs) / 1e9
		m["machine_cpu_seconds"] = cpu
		m["machine_cpu_user_seconds"] = float64(after.CPUUserNs-before.CPUUserNs) / 1e9
		m["machine_cpu_system_seconds"] = float64(after.CPUSysNs-before.CPUSysNs) / 1e9
		if wall > 0 {
			m["machine_cpu_cores"] = cpu / wall.Seconds()
		}
	}
	if after.HasThrottle {
		m["machine_cpu_periods"] = float64(after.Periods - before.Periods)
		m["machine_cpu_throttled_periods"] = float64(after.Throttled - before.Throttled)
		m["machine_cpu_throttled_seconds"] = float64(after.ThrottledNs-before.ThrottledNs) / 1e9
	}
	if r.shape.CPUs != 0 {
		m["machine_cpu_limit_cores"] = r.shape.CPUs
	}
	if after.HasMemory {
		m["machine_memory_peak_bytes"] = float64(after.MemoryMaxUsage)
		m["machine_memory_bytes"] = float64(after.MemoryUsage)
		m["machine_page_cache_bytes"] = float64(after.Cache)
		m["machine_rss_bytes"] = float64(after.RSS)
		m["machine_memory_failcnt"] = float64(after.MemoryFailcnt - before.MemoryFailcnt)
		m["machine_major_faults"] = float64(after.MajorFaults - before.MajorFaults)
		m["machine_refaulted_file_pages"] = float64(after.RefaultedFilePages - before.RefaultedFilePages)
		if r.shape.Memory != 0 {
			// The limit the kernel held: the shape's, plus storebench's
			// own memory on an embedded engine's worker.
			m["machine_memory_limit_bytes"] = float64(after.MemoryLimit)
			if own := r.mg.Own(); own.Limit > 0 {
				m["machine_storebench_memory_bytes"] = float64(own.Bytes)
				m["machine_storebench_resident_bytes"] = float64(own.Resident)
			}
		}
		if cl := r.cacheLimit; cl != nil {
			if r.shape.Cache != 0 {
				m["machine_cache_ratio"] = r.shape.Cache
			}
			m["machine_data_bytes_at_start"] = float64(cl.DataBytes)
			m["machine_own_memory_at_start_bytes"] = float64(cl.Own)
			if cl.Limit > 0 {
				m["machine_cache_budget_bytes"] = float64(cl.Budget)
				m["machine_memory_limit_bytes"] = float64(cl.Limit)
				m["machine_memory_limit_max_bytes"] = float64(r.hiLimit)
				m["machine_cache_budget_max_bytes"] = float64(r.hiBudget)
			}
		}
		if r.srv != nil {
			nodeCacheMetrics(m, r.srv.nodeHolds)
		}
		if after.HasOOMKills {
			m["machine_oom_kills"] = float64(after.OOMKills - before.OOMKills)
		}
	}
	if after.HasDisk {
		m["machine_disk_read_bytes"] = float64(after.DiskReadBytes - before.DiskReadBytes)
		m["machine_disk_write_bytes"] = float64(after.DiskWriteBytes - before.DiskWriteBytes)
		m["machine_disk_reads"] = float64(after.DiskReads - before.DiskReads)
		m["machine_disk_writes"] = float64(after.DiskWrites - before.DiskWrites)
	}
}

// OOMError is a step's error when the kernel's OOM killer killed
// processes in the target's machine group during it: the engine (an
// embedded engine's worker, or a managed server) did not fit the shape.
// Err is what the step failed with otherwise (the worker's death, a
// server's refused connections), nil when it seemed to end well.
type OOMError struct {
	Machine string // the shape's title
	Limit   int64  // the group's memory limit in bytes, 0 for none
	// Own is the part of Limit that is storebench's own memory (an
	// embedded engine's worker), 0 for none.
	Own   int64
	Kills int64 // processes killed during the step
	// Group says where, when not "its group" (a cluster: "node 2's group").
	Group string
	Err   error
}

func (e *OOMError) Error() string {
	limit := "no memory limit: the machine itself ran out"
	if e.Limit > 0 {
		limit = "limit " + human(e.Limit)
	}
	if e.Limit > 0 && e.Own > 0 {
		limit += fmt.Sprintf(": the shape's %s and storebench's own %s", human(e.Limit-e.Own), human(e.Own))
	}
	what := "process"
	if e.Kills != 1 {
		what = "processes"
	}
	where := e.Group
	if where == "" {
		where = "its group"
	}
	return fmt.Sprintf("out of memory under machine %s (%s): the kernel killed %d %s in %s", e.Machine, limit, e.Kills, what, where)
}

func (e *OOMError) Unwrap() error { return e.Err }

// machineError is the step's error once the machine group's counters
// are read again: an *OOMError when the kernel's OOM killer killed a
// process in the group since before (whatever the step answered: a step
// whose engine lost a process to the limit measured no honest shape; res,
// when measured, carries the error too), else err as it was.
func (r *targetRun) machineError(res *results.Step, err error, before *machine.Stats) error {
	if r.mg == nil || before == nil || !before.HasOOMKills {
		return err
	}
	after, per, serr := r.nodeStats()
	if serr != nil || !after.HasOOMKills || after.OOMKills <= before.OOMKills {
		return err
	}
	r.endHold()
	limit, own := r.shape.Memory, int64(0)
	if o := r.mg.Own(); o.Limit > 0 {
		limit, own = o.Limit, o.Bytes
	}
	if r.cacheLimit != nil {
		limit = r.hiLimit
	}
	oom := &OOMError{Machine: r.shape.Title(), Limit: limit, Own: own, Kills: after.OOMKills - before.OOMKills, Err: err}
	if r.srv != nil {
		oom.Group = r.oomNodes(r.srv.nodeBefore, per)
	}
	if res != nil {
		res.Error = oom.Error()
	}
	return oom
}

// stepServersNA makes n/a, on a server target, the steps whose workload
// starts servers of its own from the client worker (the durability
// workload's crash trials): the worker is outside the machine, so would
// those servers be, and the step would run without the shape.
func (r *targetRun) stepServersNA() {
	if r.info.Embedded() {
		return // the worker is in the group, and what it starts
	}
	for j, st := range r.steps {
		if !r.runnable[j] {
			continue
		}
		w, err := workload.Lookup(st.Workload)
		if err != nil {
			continue
		}
		var started []string
		if su, ok := w.(workload.ServerUser); ok {
			started = su.Servers(st)
		}
		if tc, ok := w.(workload.TargetCrasher); ok && tc.CrashesTarget(st) != "" {
			started = append(started, r.info.Name+"'s server for each crash trial")
		}
		if len(started) == 0 {
			continue
		}
		why := fmt.Sprintf("machine %s: this step starts %s from the client worker, which runs outside the machine; placing it there is not built yet", r.shape.Title(), strings.Join(started, ", "))
		r.runnable[j] = false
		r.tr.NA = append(r.tr.NA, results.NA{Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels, Status: "n/a", Reason: why})
		_ = r.o.emit(event.StepNA{Target: r.t.Name, Step: stepOf(st), Reason: why})
	}
}
