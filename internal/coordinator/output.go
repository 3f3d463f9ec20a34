package coordinator

import (
	"fmt"
	"os"
	"path/filepath"

	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/study"
)

// writeHlog writes a step's per-tick histograms as an HdrHistogram
// interval log (hdr/<target>/<workload>-<phase>-<N>.hlog), readable by
// HistogramLogAnalyzer and friends, then drops them from the step: they
// do not belong in results.json.
func writeHlog(runDir, target string, st *results.Step) {
	defer func() { st.Intervals = nil }()
	if len(st.Intervals) == 0 {
		return
	}
	dir := filepath.Join(runDir, "hdr", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	name := fmt.Sprintf("%s-%s-%s", st.Workload, st.Phase, study.FormatCount(st.N))
	if l, ok := st.Metrics["length"]; ok {
		name += fmt.Sprintf("-len%s", study.FormatCount(int64(l)))
	}
	f, err := os.Create(filepath.Join(dir, name+".hlog"))
	if err != nil {
		return
	}
	defer f.Close()
	base := st.Intervals[0].StartMs
	fmt.Fprintf(f, "#[storebench %s %s on %s, N=%d; values in nanoseconds]\n", st.Workload, st.Phase, target, st.N)
	fmt.Fprintf(f, "#[StartTime: %.3f (seconds since epoch)]\n", float64(base)/1000)
	fmt.Fprintf(f, "#[BaseTime: %.3f (seconds since epoch)]\n", float64(base)/1000)
	fmt.Fprintln(f, `"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`)
	for _, iv := range st.Intervals {
		if iv.Hist == "" {
			continue
		}
		fmt.Fprintf(f, "%.3f,%.3f,%.3f,%s\n", float64(iv.StartMs-base)/1000, float64(iv.LenMs)/1000, float64(iv.MaxNs)/1e6, iv.Hist)
	}
}

// writeRun writes results.json, report.md, report.html and charts/.
func writeRun(run *results.Run, runDir string) error {
	if err := run.Write(filepath.Join(runDir, "results.json")); err != nil {
		return err
	}
	return report.WriteAll(runDir, run)
}
