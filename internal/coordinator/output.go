package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/wire"
)

// IntendedTag tags the intervals of the latency from the intended start
// in an open-loop phase's .hlog file; its untagged intervals are the
// service time.
const IntendedTag = "intended"

// writeHlog writes a step's per-tick histograms as an HdrHistogram
// interval log (hdr/<target>/<step name>.hlog, named by the step's
// labels, e.g. ledger-stress-n1e5-c8.hlog; format 1.3,
// values in nanoseconds), which HdrHistogram's own readers
// (HistogramLogProcessor, HdrHistogram_py's HistogramLogReader) read, then
// drops them from the step: they do not belong in results.json. The
// untagged intervals are the service time; an open-loop phase also logs
// its latency from the intended start as intervals tagged "intended". A
// target on a machine shape has its machine in a header comment
// (latency.MachineComment).
func writeHlog(runDir, target, machine string, st *results.Step) error {
	defer func() { st.Intervals = nil }()
	if len(st.Intervals) == 0 {
		return nil
	}
	dir := filepath.Join(runDir, "hdr", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hdr log: %w", err)
	}
	name := st.Name()
	base := time.UnixMilli(st.Intervals[0].StartMs)
	what := fmt.Sprintf("N=%d", st.N)
	if x := st.Labels.Extra(); x != "" {
		what += " " + x
	}
	comments := []string{fmt.Sprintf("storebench %s %s on %s, %s; values in nanoseconds", st.Workload, st.Phase, target, what)}
	if machine != "" {
		comments = append(comments, latency.MachineComment(machine))
	}
	ivs := make([]latency.LogInterval, 0, 2*len(st.Intervals))
	for _, iv := range st.Intervals {
		at := time.UnixMilli(iv.StartMs).Sub(base)
		length := time.Duration(iv.LenMs) * time.Millisecond
		ivs = append(ivs, latency.LogInterval{Start: at, Length: length, MaxNs: iv.MaxNs, Hist: iv.Hist})
		if iv.HistIntended != "" {
			ivs = append(ivs, latency.LogInterval{Tag: IntendedTag, Start: at, Length: length, MaxNs: iv.MaxIntendedNs, Hist: iv.HistIntended})
		}
	}
	if len(ivs) > len(st.Intervals) {
		comments = append(comments, "untagged intervals: service time; Tag="+IntendedTag+": latency from the intended start (open loop)")
	}
	path := filepath.Join(dir, name+".hlog")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("hdr log: %w", err)
	}
	werr := latency.WriteLog(f, comments, base, ivs)
	if cerr := f.Close(); werr == nil && cerr != nil {
		werr = fmt.Errorf("hdr log: %w", cerr)
	}
	if werr != nil {
		return fmt.Errorf("%s: %w", path, werr)
	}
	return nil
}

// writeProfiles writes a step's pprof profiles (kind -> bytes, from the
// worker) to profiles/<target>/<step>.<kind>.pprof.
func writeProfiles(runDir, target string, st *results.Step, profiles map[string][]byte) error {
	if len(profiles) == 0 {
		return nil
	}
	dir := filepath.Join(runDir, "profiles", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	kinds := make([]string, 0, len(profiles))
	for k := range profiles {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if !slices.Contains(wire.ProfileKinds, k) {
			return fmt.Errorf("profiles: the worker sent an unknown kind %q", clip([]byte(k), 20))
		}
		path := filepath.Join(dir, st.Name()+"."+k+".pprof")
		if err := os.WriteFile(path, profiles[k], 0o644); err != nil {
			return fmt.Errorf("profiles: %w", err)
		}
	}
	return nil
}
