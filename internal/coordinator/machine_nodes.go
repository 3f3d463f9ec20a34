package coordinator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"storebench/internal/machine"
	"storebench/internal/server"
)

// A machine shape is a machine: on a managed cluster (redis-cluster,
// cassandra-cluster) each node runs on its own instance of the shape, a
// machine group of its own (<run>-<slot>-n<i>-<shape>), not all nodes in
// one group under one limit. The target's group, made before the server
// started (its node count is known once it has), gives way to the
// nodes' groups as the server is placed; the step's machine_ metrics are
// the nodes' sum (their maximum for peak memory and the limit, which is
// each node's), and each node's are machine_node<i>_*. Under a cache
// shape each node's group holds its own page-cache budget: R × that
// node's data, or cache=SIZE each (holdNodes).

// clusterGroups makes one group per node of the started cluster, each of
// the target's group's shape (with the cpuset placement.go added, which
// the nodes' groups share), and removes the target's own group, which
// holds nothing yet: node 1's group stands for it from then on (r.mg).
// The groups made are in m.nodeMG, so that closeMachine removes them all
// whatever fails.
func (r *targetRun) clusterGroups() error {
	m := r.srv
	if m == nil || m.inst == nil || len(m.inst.Nodes) == 0 || len(m.nodeMG) > 0 {
		return nil
	}
	shape := r.mg.Shape()
	for i := range m.inst.Nodes {
		g, err := machine.New(shape, r.mg.RunID()+"-n"+strconv.Itoa(i+1), r.dataRoot())
		if err != nil {
			return fmt.Errorf("machine %s, node %d: %w", r.shape.Title(), i+1, err)
		}
		m.nodeMG = append(m.nodeMG, g)
	}
	if err := r.mg.Close(); err != nil {
		r.o.notice(r.t.Name, "warning: "+err.Error())
	}
	r.mg = m.nodeMG[0]
	m.mg = r.mg
	return nil
}

// machineGroups is every machine group of the target: each node's on a
// cluster, else its one group (none: nil).
func (r *targetRun) machineGroups() []*machine.Group {
	if r.srv != nil && len(r.srv.nodeMG) > 0 {
		return r.srv.nodeMG
	}
	if r.mg == nil {
		return nil
	}
	return []*machine.Group{r.mg}
}

// placeNode puts node i's process tree in its own group (a cluster's
// shared group when there are no nodes' groups); a node that is down is
// placed as it restarts (placeAgain).
func (m *managed) placeNode(i int) error {
	g := m.mg
	if i < len(m.nodeMG) {
		g = m.nodeMG[i]
	}
	if g == nil || i >= len(m.inst.Nodes) {
		return nil
	}
	if pid := m.inst.Nodes[i].PID(); pid > 0 {
		return g.AddTree(pid)
	}
	return nil
}

// placeAgain puts a cluster node restarted after a fault (kill, stop)
// back in its own machine group. Under a cache shape its group kept its
// hold while the node was down (holdNodes): placed back, the node is held
// again, its limit following its memory in the group from the next tick.
func (m *managed) placeAgain(node *server.Node) error {
	i := slices.Index(m.inst.Nodes, node)
	if i < 0 {
		return nil
	}
	if err := m.placeNode(i); err != nil {
		return fmt.Errorf("placing %s in its machine group again: %w", node.Name, err)
	}
	return nil
}

// nodeStats reads every group's counters: each node's (one entry for a
// target that is no cluster) and their sum (sumStats).
func (r *targetRun) nodeStats() (sum machine.Stats, per []machine.Stats, err error) {
	for _, g := range r.machineGroups() {
		st, err := g.Stats()
		if err != nil {
			return sum, nil, err
		}
		per = append(per, st)
	}
	return sumStats(per), per, nil
}

// sumStats is the nodes' counters together: CPU, memory in use, faults,
// OOM kills and disk I/O summed; the peak memory and the limit are the
// largest node's (the limit is each node's: the shape's).
func sumStats(per []machine.Stats) machine.Stats {
	if len(per) == 0 {
		return machine.Stats{}
	}
	t := per[0]
	for _, s := range per[1:] {
		t.CPUNs += s.CPUNs
		t.CPUUserNs += s.CPUUserNs
		t.CPUSysNs += s.CPUSysNs
		t.Periods += s.Periods
		t.Throttled += s.Throttled
		t.ThrottledNs += s.ThrottledNs
		t.MemoryLimit = max(t.MemoryLimit, s.MemoryLimit)
		t.MemoryUsage += s.MemoryUsage
		t.MemoryMaxUsage = max(t.MemoryMaxUsage, s.MemoryMaxUsage)
		t.MemoryFailcnt += s.MemoryFailcnt
		t.Cache += s.Cache
		t.RSS += s.RSS
		t.MappedFile += s.MappedFile
		t.Dirty += s.Dirty
		t.Writeback += s.Writeback
		t.MajorFaults += s.MajorFaults
		t.RefaultedFilePages += s.RefaultedFilePages
		t.OOMKills += s.OOMKills
		t.DiskReadBytes += s.DiskReadBytes
		t.DiskWriteBytes += s.DiskWriteBytes
		t.DiskReads += s.DiskReads
		t.DiskWrites += s.DiskWrites
	}
	return t
}

// nodeMetrics adds each node's own figures over the step to m, as
// machine_node<i>_* (a cluster only).
func nodeMetrics(m map[string]float64, before, after []machine.Stats, wall float64) {
	if len(after) < 2 || len(before) != len(after) {
		return
	}
	for i := range after {
		a, b := after[i], before[i]
		k := func(name string) string { return fmt.Sprintf("machine_node%d_%s", i+1, name) }
		if a.HasCPU {
			cpu := float64(a.CPUNs-b.CPUNs) / 1e9
			m[k("cpu_seconds")] = cpu
			if wall > 0 {
				m[k("cpu_cores")] = cpu / wall
			}
		}
		if a.HasThrottle {
			m[k("cpu_throttled_seconds")] = float64(a.ThrottledNs-b.ThrottledNs) / 1e9
		}
		if a.HasMemory {
			m[k("memory_peak_bytes")] = float64(a.MemoryMaxUsage)
			m[k("memory_bytes")] = float64(a.MemoryUsage)
			m[k("page_cache_bytes")] = float64(a.Cache)
			m[k("rss_bytes")] = float64(a.RSS)
			if a.HasOOMKills {
				m[k("oom_kills")] = float64(a.OOMKills - b.OOMKills)
			}
		}
		if a.HasDisk {
			m[k("disk_read_bytes")] = float64(a.DiskReadBytes - b.DiskReadBytes)
			m[k("disk_write_bytes")] = float64(a.DiskWriteBytes - b.DiskWriteBytes)
		}
	}
}

// oomNodes names the nodes whose groups the OOM killer struck since
// before ("node 2's group"; "" when not a cluster or none is known).
func (r *targetRun) oomNodes(before, after []machine.Stats) string {
	if len(after) < 2 || len(before) != len(after) {
		return ""
	}
	var hit []string
	for i := range after {
		if after[i].OOMKills > before[i].OOMKills {
			hit = append(hit, strconv.Itoa(i+1))
		}
	}
	switch len(hit) {
	case 0:
		return ""
	case 1:
		return "node " + hit[0] + "'s group"
	}
	return "the groups of nodes " + strings.Join(hit, ", ")
}

// clusterNotes says, on a cluster, that each node ran on its own machine
// of the shape, and records each node's group and the processes in it
// once placed (machine_node_groups: "node1 NAME: GROUP (pids P, Q); ...").
func (r *targetRun) clusterNotes(set map[string]string) {
	if r.srv == nil || r.srv.inst == nil || len(r.srv.nodeMG) == 0 {
		return
	}
	n := len(r.srv.nodeMG)
	note := fmt.Sprintf("; each of the cluster's %d nodes on its own machine of this shape (%d groups: each node's process tree in its own, with the shape's limits)", n, n)
	if cs := r.mg.Shape().CPUSet; cs != "" {
		note += fmt.Sprintf("; the nodes' groups share %s, each with its own CPU quota", plural("CPU", cs))
	}
	set["machine_placement"] += note
	var parts []string
	for i, g := range r.srv.nodeMG {
		pids, _ := g.Procs()
		ps := make([]string, len(pids))
		for j, p := range pids {
			ps[j] = strconv.Itoa(p)
		}
		name := ""
		if i < len(r.srv.inst.Nodes) {
			name = " " + r.srv.inst.Nodes[i].Addr
		}
		parts = append(parts, fmt.Sprintf("node%d%s: %s (pids %s)", i+1, name, g.Name(), strings.Join(ps, ", ")))
	}
	set["machine_node_groups"] = strings.Join(parts, "; ")
}

// nodeHolds is, under a cache shape, each node's own page-cache hold
// through a step (node i+1's at i; nil where the kernel refused it) and,
// once the step ended, what each set.
type nodeHolds struct {
	holds   []*machine.CacheHold
	first   []machine.CacheLimit
	hi, hiB []int64
	ended   bool
}

// holdNodes holds each node's group through the step to its own budget:
// its memory outside the page cache plus R × the node's own data on
// disk (its data directory), or plus SIZE under cache=SIZE, followed as
// the step goes (machine.CacheHold). A node killed by a fault keeps its
// group's hold while it is down, and placed back in its group as it
// restarts (placeAgain) it is held by it again. A node whose limit the
// kernel refuses runs without one, with a warning, as a single group.
func (r *targetRun) holdNodes(fresh bool) {
	m := r.srv
	nh := &nodeHolds{}
	m.nodeHolds = nh
	for i, g := range m.nodeMG {
		dir := ""
		if i < len(m.inst.Nodes) {
			dir = m.inst.Nodes[i].DataDir
		}
		if dir == "" {
			r.o.notice(r.t.Name, fmt.Sprintf("warning: machine %s, node %d: no data directory: its page cache is not held", r.shape.Title(), i+1))
			nh.holds = append(nh.holds, nil)
			continue
		}
		h, err := g.HoldCache(dataSize(dir, fresh))
		if err != nil {
			r.o.notice(r.t.Name, fmt.Sprintf("warning: node %d: %v", i+1, err))
		}
		nh.holds = append(nh.holds, h)
	}
}

// endNodeHolds ends each node's hold (its limit lifted until the next
// step's) and keeps what each set; the target's cache limit becomes the
// nodes' together (data, own memory and budgets summed, the limits the
// largest node's, as a memory= shape's), when every node was held.
func (r *targetRun) endNodeHolds() {
	if r.srv == nil || r.srv.nodeHolds == nil || r.srv.nodeHolds.ended {
		return
	}
	nh := r.srv.nodeHolds
	nh.ended = true
	n := len(nh.holds)
	nh.first, nh.hi, nh.hiB = make([]machine.CacheLimit, n), make([]int64, n), make([]int64, n)
	var sum machine.CacheLimit
	var hi, hiB int64
	all := n > 0
	for i, h := range nh.holds {
		if h == nil {
			all = false
			continue
		}
		first, hiL, hiBu, err := h.Stop()
		if err != nil {
			r.o.notice(r.t.Name, fmt.Sprintf("warning: node %d: %v", i+1, err))
		}
		nh.first[i], nh.hi[i], nh.hiB[i] = first, hiL, hiBu
		sum.DataBytes += first.DataBytes
		sum.Own += first.Own
		sum.Budget += first.Budget
		sum.Limit = max(sum.Limit, first.Limit)
		hi, hiB = max(hi, hiL), hiB+hiBu
	}
	if all {
		r.cacheLimit, r.hiLimit, r.hiBudget = &sum, hi, hiB
	}
}

// nodeCacheMetrics adds each held node's cache limit over the step to m,
// as machine_node<i>_*: its data at the start, its own memory then, and
// (where a limit was set) its budget and limit, first and highest.
func nodeCacheMetrics(m map[string]float64, nh *nodeHolds) {
	if nh == nil || !nh.ended {
		return
	}
	for i, h := range nh.holds {
		if h == nil {
			continue
		}
		k := func(name string) string { return fmt.Sprintf("machine_node%d_%s", i+1, name) }
		cl := nh.first[i]
		m[k("data_bytes_at_start")] = float64(cl.DataBytes)
		m[k("own_memory_at_start_bytes")] = float64(cl.Own)
		if cl.Limit > 0 {
			m[k("cache_budget_bytes")] = float64(cl.Budget)
			m[k("cache_budget_max_bytes")] = float64(nh.hiB[i])
			m[k("memory_limit_bytes")] = float64(cl.Limit)
			m[k("memory_limit_max_bytes")] = float64(nh.hi[i])
		}
	}
}
