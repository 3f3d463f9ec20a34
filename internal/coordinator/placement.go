package coordinator

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"storebench/internal/machine"
	"storebench/internal/measure/procstat"
	"storebench/internal/study"
)

// Issue 35 item 1: on a machine shape, a managed server and the client
// workers that drive it run on CPUs of their own where this machine has
// CPUs to spare. The server's group gets a cpuset (the shape's, or the
// last ceil(cpus) CPUs when the shape sets cpus alone) and every local
// client worker of the target is pinned to the CPUs outside it, so the
// server's figure no longer depends on how much CPU the load generator
// took. An embedded engine's worker holds the engine and the load
// generator in one process: nothing separates them.

// cpuPlacement is where a target's sides run on its machine.
type cpuPlacement struct {
	// server is the server group's CPUs (its cpuset), client the CPUs the
	// target's local client workers are pinned to; both nil when nothing
	// is pinned (why says why).
	server, client []int
	// added: storebench added the cpuset to the group (the shape sets
	// cpus alone); else it is the shape's own.
	added bool
	why   string
	// remote lists the hosts of client workers on other machines; local
	// counts the ones here.
	remote []string
	local  int
	// avail is the CPUs storebench may use here.
	avail []int
}

// planCPUs places a target's sides on shape: embedded (one process) or
// a server driven by client workers on hosts, given the CPUs this
// machine offers (avail, sorted) and why a cpuset cannot be enforced
// here ("" when it can; asked only when one would be added).
func planCPUs(shape machine.Shape, embedded bool, hosts []study.Host, avail []int, cpusetWhyNot func() string) cpuPlacement {
	p := cpuPlacement{avail: avail}
	if embedded {
		return p
	}
	for _, h := range hosts {
		if h.Local {
			p.local++
		} else if !slices.Contains(p.remote, h.Raw) {
			p.remote = append(p.remote, h.Raw)
		}
	}
	switch {
	case p.local == 0:
		p.why = "the load generator runs on other hosts"
		return p
	case shape.CPUSet != "":
		server, err := procstat.ParseCPUList(shape.CPUSet)
		if err != nil {
			p.why = err.Error()
			return p
		}
		var rest []int
		for _, c := range avail {
			if !slices.Contains(server, c) {
				rest = append(rest, c)
			}
		}
		if len(rest) == 0 {
			p.why = fmt.Sprintf("none to spare: the shape's cpuset=%s takes every CPU storebench may use (%s)", shape.CPUSet, procstat.FormatCPUList(avail))
			return p
		}
		p.server, p.client = server, rest
	case shape.CPUs != 0:
		n := int(math.Ceil(shape.CPUs))
		if len(avail)-n < 1 {
			p.why = fmt.Sprintf("none to spare: cpus=%s needs %d of the %d CPU(s) storebench may use (%s)",
				strconv.FormatFloat(shape.CPUs, 'f', -1, 64), n, len(avail), procstat.FormatCPUList(avail))
			return p
		}
		if why := cpusetWhyNot(); why != "" {
			p.why = "a cpuset cannot be enforced here: " + why
			return p
		}
		p.server, p.client, p.added = slices.Clone(avail[len(avail)-n:]), slices.Clone(avail[:len(avail)-n]), true
	default:
		p.why = "the shape sets no CPU limit"
	}
	return p
}

// groupShape is the shape the target's machine group is made with: the
// shape as given, or, for a server whose shape sets cpus alone on a
// machine with CPUs to spare, a copy with the server's cpuset added. The
// target keeps the shape as the user gave it (its name, title and
// machine string); r.cpus says where each side goes.
func (r *targetRun) groupShape() machine.Shape {
	sh := *r.shape
	p := planCPUs(sh, r.info.Embedded(), r.s.Placement(), availableCPUs(), func() string {
		return machine.Can(r.dataRoot())[machine.KeyCPUSet]
	})
	r.cpus = &p
	if p.added {
		sh.CPUSet = procstat.FormatCPUList(p.server)
	}
	return sh
}

// availableCPUs is this machine's online CPUs that storebench itself may
// run on (its affinity: under taskset or a container's cpuset, fewer).
func availableCPUs() []int {
	online := machine.OnlineCPUs()
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		return online
	}
	var out []int
	for _, c := range online {
		if mine.IsSet(c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return online
	}
	return out
}

// pinClients pins the target's local client workers to the CPUs outside
// the server's, right after they started (before they opened the
// store): every thread they have, and so every thread they make later.
func (r *targetRun) pinClients() error {
	if r.mg == nil || r.cpus == nil || len(r.cpus.client) == 0 || r.g == nil {
		return nil
	}
	for i, p := range r.g.procs {
		if i < len(r.g.remote) && r.g.remote[i] {
			continue
		}
		if err := pinTasks(p.cmd.Process.Pid, r.cpus.client); err != nil {
			return fmt.Errorf("machine %s: pinning the client worker (pid %d) to CPU %s: %w", r.shape.Title(), p.cmd.Process.Pid, procstat.FormatCPUList(r.cpus.client), err)
		}
	}
	return nil
}

// pinTasks sets the CPU affinity of every thread of pid, again until a
// pass finds no thread it has not set (a thread made meanwhile by one
// not yet set).
func pinTasks(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for range 50 {
		tids, err := tasksOf(pid)
		if err != nil {
			return err
		}
		fresh := false
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh = true
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
			done[tid] = true
		}
		if !fresh {
			return nil
		}
	}
	return fmt.Errorf("it kept making threads")
}

// tasksOf lists the threads of process pid.
func tasksOf(pid int) ([]int, error) { return procstat.Threads(pid) }

// allowedCPUs is the kernel's view of where the threads of pids may run
// (each thread's Cpus_allowed_list): one list when they all agree, else
// each list with its thread count; "" when none could be read.
func allowedCPUs(pids []int) string {
	count := map[string]int{}
	var order []string
	for _, pid := range pids {
		tids, _ := tasksOf(pid)
		for _, tid := range tids {
			v, err := procstat.CPUsAllowed(pid, tid)
			if err != nil {
				continue
			}
			if count[v] == 0 {
				order = append(order, v)
			}
			count[v]++
		}
	}
	if len(order) == 1 {
		return order[0]
	}
	var parts []string
	for _, v := range order {
		parts = append(parts, fmt.Sprintf("%s (%d threads)", v, count[v]))
	}
	return strings.Join(parts, "; ")
}

// placementNotes adds to the target's settings where its sides ran on
// the machine's CPUs: to machine_placement in words, and, for a server,
// machine_cpus_server and machine_cpus_client as the kernel had them
// once the server and its client workers were placed (the threads'
// Cpus_allowed_list).
func (r *targetRun) placementNotes() {
	p := r.cpus
	if p == nil {
		return
	}
	set := r.tr.Settings
	if r.info.Embedded() {
		where := "on the machine's CPUs"
		if r.shape.CPUSet != "" {
			where = "on the shape's CPUs (" + plural("CPU", r.shape.CPUSet) + ")"
		} else if r.shape.CPUs != 0 {
			where = "on the shape's CPUs (its CPU time, on any of the machine's CPUs)"
		}
		set["machine_placement"] += "; engine and load generator in one process, " + where + ": nothing separates them"
		return
	}
	workers := "client worker"
	if p.local > 1 {
		workers = fmt.Sprintf("%d client workers", p.local)
	}
	var where string
	switch {
	case len(p.client) > 0:
		how := "the shape's cpuset"
		if p.added {
			how = fmt.Sprintf("cpuset=%s, added by storebench: the last ceil(cpus) of %s", procstat.FormatCPUList(p.server), plural("CPU", procstat.FormatCPUList(p.avail)))
		}
		where = fmt.Sprintf("server on %s (%s), load generator (%s) on %s (pinned: every thread's affinity)",
			plural("CPU", procstat.FormatCPUList(p.server)), how, workers, plural("CPU", procstat.FormatCPUList(p.client)))
	case p.local == 0:
		where = "load generator on other hosts (" + strings.Join(p.remote, ", ") + ")"
	default:
		where = "load generator and server share the machine's CPUs: " + p.why
	}
	if p.local > 0 && len(p.remote) > 0 {
		where += "; client workers on other hosts too (" + strings.Join(p.remote, ", ") + ")"
	}
	set["machine_placement"] += "; " + where
	if r.mg != nil {
		if pids, err := r.mg.Procs(); err == nil {
			if v := allowedCPUs(pids); v != "" {
				set["machine_cpus_server"] = v
			}
		}
	}
	var local []int
	if r.g != nil {
		for i, pr := range r.g.procs {
			if i < len(r.g.remote) && !r.g.remote[i] {
				local = append(local, pr.cmd.Process.Pid)
			}
		}
	}
	if v := allowedCPUs(local); v != "" {
		set["machine_cpus_client"] = v
	}
}

// plural is "CPU 1" or "CPUs 0-1".
func plural(word, list string) string {
	if strings.ContainsAny(list, ",-") {
		return word + "s " + list
	}
	return word + " " + list
}
