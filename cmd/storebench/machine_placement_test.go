//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/machine"
)

// Issue 35 item 1: under a shape that sets cpus, a managed server runs
// on the last ceil(cpus) CPUs (a cpuset storebench adds to its group)
// and its client worker, the load generator, on the others; where the
// shape leaves no CPU to spare nothing is pinned, and the settings say
// why. The target keeps the shape as given.

// placementCPUs is the CPUs a run started from this test may use: the
// online ones within this process's affinity (the run inherits it).
func placementCPUs(t *testing.T) []int {
	t.Helper()
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, c := range machine.OnlineCPUs() {
		if mine.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// kernelList writes sorted CPUs as the kernel's Cpus_allowed_list does.
func kernelList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// allowedList is the Cpus_allowed_list of every thread of pid, each
// distinct list once, sorted.
func allowedList(pid int) []string {
	var out []string
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name()))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && !slices.Contains(out, strings.TrimSpace(v)) {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	slices.Sort(out)
	return out
}

// workersOf lists the worker processes the storebench process pid
// started (its children running `storebench worker`).
func workersOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
		args := strings.Split(strings.TrimRight(string(cl), "\x00"), "\x00")
		if len(args) >= 2 && args[1] == "worker" {
			out = append(out, child)
		}
	}
	return out
}

// kernelView is what a watcher saw of a run while it ran: the CPUs the
// threads of the processes in its cpuset groups, and of its workers,
// were allowed.
type kernelView struct {
	mu      sync.Mutex
	server  map[string]bool // Cpus_allowed_list of the cpuset groups' threads
	cpuset  map[string]bool // the groups' cpuset.cpus while they held processes
	workers map[string]bool // Cpus_allowed_list of the workers' threads
	// pinned lists the samples in which every thread of a worker had
	// the same list: that list.
	pinned map[string]bool
}

// watchRun samples, every 100 ms until stop closes, the kernel's view of
// the run that cmd (started) writes under out.
func watchRun(cmd *exec.Cmd, out string, stop chan struct{}) *kernelView {
	v := &kernelView{server: map[string]bool{}, cpuset: map[string]bool{}, workers: map[string]bool{}, pinned: map[string]bool{}}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ents, _ := os.ReadDir(out)
			if len(ents) != 1 {
				continue
			}
			dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/cpuset", machine.ParentName, ents[0].Name()+"-*"))
			v.mu.Lock()
			for _, d := range dirs {
				procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
				cpus, _ := os.ReadFile(filepath.Join(d, "cpuset.cpus"))
				pids := strings.Fields(string(procs))
				if len(pids) > 0 {
					v.cpuset[strings.TrimSpace(string(cpus))] = true
				}
				for _, p := range pids {
					if pid, err := strconv.Atoi(p); err == nil {
						for _, l := range allowedList(pid) {
							v.server[l] = true
						}
					}
				}
			}
			for _, w := range workersOf(cmd.Process.Pid) {
				l := allowedList(w)
				for _, c := range l {
					v.workers[c] = true
				}
				if len(l) == 1 {
					v.pinned[l[0]] = true
				}
			}
			v.mu.Unlock()
		}
	}()
	return v
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// needPlacement skips unless this machine can enforce cpus and cpuset
// and has two CPUs or more.
func needPlacement(t *testing.T) []int {
	t.Helper()
	c := machine.Can(t.TempDir())
	for _, k := range []string{machine.KeyCPUs, machine.KeyCPUSet} {
		if c[k] != "" {
			t.Fatalf("machine shapes: %s: %s (make test runs as root on a machine with cgroup v1 cpu and cpuset)", k, c[k])
		}
	}
	cpus := placementCPUs(t)
	if len(cpus) < 2 {
		t.Fatalf("one CPU (%s): nothing to put the load generator on; make test runs on a machine of 2 CPUs or more, every one allowed to it", kernelList(cpus))
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not installed (make deps installs it)")
	}
	return cpus
}

// TestMachinePlacementServer: redis under cpus=0.5 runs on the last
// CPU, its client worker on the others, as the settings say and as the
// kernel had it while the run ran; the target keeps its shape's name.
func TestMachinePlacementServer(t *testing.T) {
	cpus := needPlacement(t)
	serverWant, clientWant := kernelList(cpus[len(cpus)-1:]), kernelList(cpus[:len(cpus)-1])
	out := t.TempDir()
	cmd := storebench(t, "run", "ycsb", "--targets", "redis", "--ladder", "2000", "--set", "ycsb.workloads=[a]",
		// At 10000 ops/s the run step lasts 2 s at least: the watcher
		// sees the worker pinned, however fast this machine.
		"--set", "ycsb.operations=20000", "--set", "ycsb.rate=10000", "--machine", "cpus=0.5", "--quiet", "--out", out)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	seen := watchRun(cmd, out, stop)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("still running after 5 minutes\n%s", e.String())
	}
	close(stop)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, o.String(), e.String())
	}
	dir := onlyDir(t, out)
	tr := readRun(t, dir).Targets[0]
	if tr.Status != "ok" || len(tr.Steps) != 2 {
		t.Fatalf("%s: %s %s, %d steps", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
	}
	if tr.Name != "redis@cpus=0.5" || tr.Machine != "cpus=0.5" || !strings.HasSuffix(tr.Title, " on cpus=0.5") {
		t.Errorf("the target was renamed: name %q, machine %q, title %q", tr.Name, tr.Machine, tr.Title)
	}
	set := tr.Settings
	t.Logf("machine_placement: %s", set["machine_placement"])
	t.Logf("machine_cpus_server %q, machine_cpus_client %q", set["machine_cpus_server"], set["machine_cpus_client"])
	if set["machine_cpus_server"] != serverWant || set["machine_cpus_client"] != clientWant {
		t.Errorf("the server ran on CPUs %q and the client worker on %q, want %s and %s",
			set["machine_cpus_server"], set["machine_cpus_client"], serverWant, clientWant)
	}
	for _, w := range []string{"server on " + plural(serverWant), "load generator (client worker) on " + plural(clientWant)} {
		if !strings.Contains(set["machine_placement"], w) {
			t.Errorf("machine_placement does not say %q: %s", w, set["machine_placement"])
		}
	}
	// The kernel's view while the run ran: every thread in the server's
	// cpuset group on the last CPU, and the client worker, once pinned,
	// on the others (before its pinning it had them all).
	seen.mu.Lock()
	defer seen.mu.Unlock()
	t.Logf("seen: cpuset.cpus %v, server threads %v, worker threads %v (all of a worker's alike: %v)", keys(seen.cpuset), keys(seen.server), keys(seen.workers), keys(seen.pinned))
	if s := keys(seen.cpuset); len(s) != 1 || s[0] != serverWant {
		t.Errorf("the server's cpuset group held processes with cpuset.cpus %v, want only %s", s, serverWant)
	}
	if s := keys(seen.server); len(s) != 1 || s[0] != serverWant {
		t.Errorf("the server's threads were allowed CPUs %v, want only %s", s, serverWant)
	}
	if !seen.pinned[clientWant] {
		t.Errorf("the client worker's threads were never all on %s: %v", clientWant, keys(seen.workers))
	}
	for w := range seen.workers {
		if w != clientWant && w != kernelList(cpus) {
			t.Errorf("the client worker's threads were allowed %q, neither pinned (%s) nor not yet (%s)", w, clientWant, kernelList(cpus))
		}
	}
	if left := runGroups(t, dir); len(left) > 0 {
		t.Fatalf("groups left after the run: %v", left)
	}
}

// TestMachinePlacementNoneToSpare: cpus=N on a machine of N CPUs leaves
// none for the load generator: nothing is pinned, both sides had every
// CPU, and the settings say why.
func TestMachinePlacementNoneToSpare(t *testing.T) {
	cpus := needPlacement(t)
	if len(cpus) != len(machine.OnlineCPUs()) {
		t.Fatalf("this test's affinity (%s) is narrower than the machine's CPUs, so cpus=%d would not be accepted: make test runs with every CPU allowed to it (no taskset)", kernelList(cpus), len(cpus))
	}
	all := kernelList(cpus)
	shape := "cpus=" + strconv.Itoa(len(cpus))
	dir, tr, stderr := runOK(t, 5*time.Minute, 2, "run", "ycsb", "--targets", "redis", "--ladder", "2000",
		"--set", "ycsb.workloads=[a]", "--set", "ycsb.operations=5000", "--machine", shape, "--quiet")
	if tr.Machine != shape {
		t.Errorf("machine %q, want %q\n%s", tr.Machine, shape, stderr)
	}
	set := tr.Settings
	t.Logf("machine_placement: %s", set["machine_placement"])
	if !strings.Contains(set["machine_placement"], "load generator and server share the machine's CPUs: none to spare") {
		t.Errorf("machine_placement does not say the sides share the CPUs, none to spare: %s", set["machine_placement"])
	}
	if set["machine_cpus_server"] != all || set["machine_cpus_client"] != all {
		t.Errorf("the server ran on %q and the client on %q, want both on %s (nothing pinned)", set["machine_cpus_server"], set["machine_cpus_client"], all)
	}
	if left := runGroups(t, dir); len(left) > 0 {
		t.Fatalf("groups left after the run: %v", left)
	}
}

// plural is "CPU 1" or "CPUs 0-1", as the placement setting writes it.
func plural(list string) string {
	if strings.ContainsAny(list, ",-") {
		return "CPUs " + list
	}
	return "CPU " + list
}
