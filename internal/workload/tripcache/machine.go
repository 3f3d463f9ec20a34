package tripcache

import (
	"math"
	"runtime"

	"github.com/prometheus/procfs"
)

// cpuTimes is the first line of /proc/stat: the whole machine's CPU time
// in clock ticks, busy and idle (iowait apart).
type cpuTimes struct{ busy, idle, iowait int64 }

func readCPUTimes() (cpuTimes, bool) {
	pfs, err := procfs.NewDefaultFS()
	if err != nil {
		return cpuTimes{}, false
	}
	st, err := pfs.Stat()
	if err != nil {
		return cpuTimes{}, false
	}
	// procfs gives seconds (ticks / USER_HZ); back to whole ticks.
	ticks := func(s float64) int64 { return int64(math.Round(s * 100)) }
	c := st.CPUTotal
	return cpuTimes{busy: ticks(c.User) + ticks(c.Nice) + ticks(c.System) + ticks(c.IRQ) + ticks(c.SoftIRQ) + ticks(c.Steal),
		idle: ticks(c.Idle), iowait: ticks(c.Iowait)}, true
}

// machineCPU is the machine's busy and iowait CPU between two readings,
// in percent of one core (100% = one core busy), like the processes'
// figures: on a shared machine, work that is not ours shows here and
// not in the generator's, consumer's or server's CPU.
func machineCPU(a, b cpuTimes) (busy, iowait float64) {
	total := (b.busy - a.busy) + (b.idle - a.idle) + (b.iowait - a.iowait)
	if total <= 0 {
		return 0, 0
	}
	n := float64(runtime.NumCPU())
	return 100 * n * float64(b.busy-a.busy) / float64(total), 100 * n * float64(b.iowait-a.iowait) / float64(total)
}
