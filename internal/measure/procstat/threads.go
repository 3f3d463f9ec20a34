package procstat

import (
	"sort"

	"github.com/prometheus/procfs"
)

// Threads lists the ids of process pid's threads.
func Threads(pid int) ([]int, error) {
	ts, err := procfs.AllThreads(pid)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.PID)
	}
	sort.Ints(out)
	return out, nil
}

// CPUsAllowed is where thread tid of process pid may run, as the kernel
// writes a CPU list ("0-1", "0,2-3"): its Cpus_allowed_list.
func CPUsAllowed(pid, tid int) (string, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "", err
	}
	p, err := fs.Thread(pid, tid)
	if err != nil {
		return "", err
	}
	st, err := p.NewStatus()
	if err != nil {
		return "", err
	}
	return cpuList(st.CpusAllowedList), nil
}

// cpuList writes CPU numbers as the kernel's ranges ("0-1,3").
func cpuList(cpus []uint64) string {
	ints := make([]int, len(cpus))
	for i, c := range cpus {
		ints[i] = int(c)
	}
	return FormatCPUList(ints)
}
