package tripcache

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// cpuTimes is the first line of /proc/stat: the whole machine's CPU time
// in clock ticks, busy and idle (iowait apart).
type cpuTimes struct{ busy, idle, iowait int64 }

func readCPUTimes() (cpuTimes, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return cpuTimes{}, false
	}
	fs := strings.Fields(sc.Text())
	if len(fs) < 8 || fs[0] != "cpu" {
		return cpuTimes{}, false
	}
	var v [8]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(fs[i+1], 10, 64)
	}
	// user nice system idle iowait irq softirq steal
	return cpuTimes{busy: v[0] + v[1] + v[2] + v[5] + v[6] + v[7], idle: v[3], iowait: v[4]}, true
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
