package procstat

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// CPUsAllowed reads what the kernel says of this test's own threads, the
// list the same as /proc/self/status's.
func TestThreadsAndCPUsAllowed(t *testing.T) {
	tids, err := Threads(os.Getpid())
	if err != nil || len(tids) == 0 {
		t.Fatalf("Threads: %v, %v", tids, err)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			want = strings.TrimSpace(v)
		}
	}
	got, err := CPUsAllowed(os.Getpid(), tids[0])
	if err != nil || got != want {
		t.Fatalf("CPUsAllowed = %q, %v; /proc/self/status says %q (%d CPUs)", got, err, want, runtime.NumCPU())
	}
	for _, c := range []struct {
		in   []uint64
		want string
	}{{nil, ""}, {[]uint64{0}, "0"}, {[]uint64{0, 1}, "0-1"}, {[]uint64{0, 2, 3, 5}, "0,2-3,5"}} {
		if got := cpuList(c.in); got != c.want {
			t.Errorf("cpuList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
