package coordinator

import (
	"fmt"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/workload"
)

// mergeParts merges the results of the worker processes that shared one
// step into one step: operations summed, histograms merged exactly (whole
// step, per operation type, and per interval, the intervals matched by
// their absolute start time, which the shared start makes the same in
// every worker), resources summed, and what each worker did kept in
// Workers. hosts[i] and pids[i] say where part i ran.
func mergeParts(parts []*results.Step, hosts []string, pids []int) (*results.Step, error) {
	if err := checkParts(parts); err != nil {
		return nil, err
	}
	m := *parts[0]
	m.Ops, m.Late, m.Seconds, m.Retried = 0, 0, 0, 0
	m.Verify = results.Verify{}
	m.Workers = nil
	m.Partial = false
	m.Error = ""
	var err error
	if m.Metrics, err = mergeMetrics(parts); err != nil {
		return nil, err
	}

	service, intended := latency.New(), (*hdr.Histogram)(nil)
	byOp := map[string]*hdr.Histogram{}
	var rs []results.Resources
	for i, p := range parts {
		m.Ops += p.Ops
		m.Late += p.Late
		m.Retried += p.Retried
		m.Seconds = max(m.Seconds, p.Seconds)
		if p.Started.Before(m.Started) {
			m.Started = p.Started
		}
		m.Verify.Checked += p.Verify.Checked
		m.Verify.Failed += p.Verify.Failed
		if m.Verify.First == "" {
			m.Verify.First = p.Verify.First
		}
		m.Partial = m.Partial || p.Partial
		if m.Error == "" && p.Error != "" {
			m.Error = fmt.Sprintf("worker %d: %s", i, p.Error)
		}
		if err := mergeEncoded(service, p.Hist); err != nil {
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		if p.HistIntended != "" {
			if intended == nil {
				intended = latency.New()
			}
			if err := mergeEncoded(intended, p.HistIntended); err != nil {
				return nil, fmt.Errorf("worker %d: %w", i, err)
			}
		}
		if len(p.ByOp) > 0 && len(p.ByOpHist) != len(p.ByOp) {
			return nil, fmt.Errorf("worker %d sent summaries per operation without their histograms", i)
		}
		for name, enc := range p.ByOpHist {
			if byOp[name] == nil {
				byOp[name] = latency.New()
			}
			if err := mergeEncoded(byOp[name], enc); err != nil {
				return nil, fmt.Errorf("worker %d, %s: %w", i, name, err)
			}
		}
		wp := results.WorkerPart{Index: i, Host: hosts[i], PID: pids[i], Ops: p.Ops, Seconds: p.Seconds, Late: p.Late,
			Latency: p.Latency, Hist: p.Hist, HistIntended: p.HistIntended, Verified: p.Verify.Checked, Resources: p.Resources}
		if p.Seconds > 0 {
			wp.OpsPerS = float64(p.Ops) / p.Seconds
		}
		m.Workers = append(m.Workers, wp)
		rs = append(rs, p.Resources)
	}
	setMergedLatency(&m, service, intended, byOp)
	if m.Series, m.Intervals, err = mergeIntervals(parts); err != nil {
		return nil, err
	}
	m.Resources = sumResources(rs)
	return &m, nil
}

// checkParts refuses parts that cannot be merged: none at all, a worker
// that sent no result, or a step with streams or background tasks, so
// mergeParts only ever sums parts of one shape.
func checkParts(parts []*results.Step) error {
	if len(parts) == 0 {
		return fmt.Errorf("no part to merge")
	}
	for i, p := range parts {
		if p == nil {
			return fmt.Errorf("worker %d sent no result", i)
		}
		if len(p.Streams) > 0 || len(p.Background) > 0 {
			// No splitting workload has them yet; merging them would need
			// the same care as mergeParts takes, per stream.
			return fmt.Errorf("a step with streams or background tasks cannot be merged across workers")
		}
	}
	return nil
}

// setMergedLatency sets m's latency summaries and encoded histograms from
// the merged ones (service time, intended-start time when the parts had
// it, and each operation's), so the whole step reads as one worker's
// would; a step without any sample keeps no histogram.
func setMergedLatency(m *results.Step, service, intended *hdr.Histogram, byOp map[string]*hdr.Histogram) {
	if service.TotalCount() > 0 {
		m.Latency = latency.Summarize(service)
		m.Hist, _ = latency.Encode(service)
	} else {
		m.Hist = ""
	}
	if intended != nil {
		s := latency.Summarize(intended)
		m.Intended = &s
		m.HistIntended, _ = latency.Encode(intended)
	}
	m.ByOp, m.ByOpHist = nil, nil
	for name, h := range byOp {
		if m.ByOp == nil {
			m.ByOp, m.ByOpHist = map[string]latency.Summary{}, map[string]string{}
		}
		m.ByOp[name] = latency.Summarize(h)
		m.ByOpHist[name], _ = latency.Encode(h)
	}
}

// mergeMetrics combines the parts' workload figures as the workload
// says (a record count is the whole's, a count of errors the parts' sum).
func mergeMetrics(parts []*results.Step) (map[string]float64, error) {
	if parts[0].Metrics == nil {
		return nil, nil
	}
	w, err := workload.Lookup(parts[0].Workload)
	if err != nil {
		return nil, err
	}
	sp, ok := w.(workload.Splitter)
	if !ok {
		return nil, fmt.Errorf("workload %s does not split, yet %d parts came back", parts[0].Workload, len(parts))
	}
	out := map[string]float64{}
	for k, v := range parts[0].Metrics {
		switch how := sp.MergeMetric(k); how {
		case workload.Same:
			for i, p := range parts {
				if p.Metrics[k] != v {
					return nil, fmt.Errorf("metric %s: worker 0 says %v, worker %d %v (a figure of the whole must agree)", k, v, i, p.Metrics[k])
				}
			}
			out[k] = v
		default:
			x := 0.0
			for _, p := range parts {
				if how == workload.Max {
					x = max(x, p.Metrics[k])
				} else {
					x += p.Metrics[k]
				}
			}
			out[k] = x
		}
	}
	return out, nil
}

func mergeEncoded(into *hdr.Histogram, enc string) error {
	if enc == "" {
		return nil
	}
	h, err := latency.Decode(enc)
	if err != nil {
		return fmt.Errorf("decoding a histogram: %w", err)
	}
	into.Merge(h)
	return nil
}

// mergeIntervals merges the parts' per-tick histograms by absolute start
// time, and rebuilds the time series from them: operations and resources
// summed, percentiles from the merged histograms.
func mergeIntervals(parts []*results.Step) ([]results.Tick, []results.Interval, error) {
	type acc struct {
		iv                results.Interval
		service, intended *hdr.Histogram
		tick              results.Tick
	}
	byStart := map[int64]*acc{}
	for i, p := range parts {
		if len(p.Series) != len(p.Intervals) {
			return nil, nil, fmt.Errorf("worker %d: %d ticks and %d intervals", i, len(p.Series), len(p.Intervals))
		}
		for j, iv := range p.Intervals {
			a := byStart[iv.StartMs]
			if a == nil {
				a = &acc{iv: results.Interval{StartMs: iv.StartMs}, service: latency.New()}
				byStart[iv.StartMs] = a
			}
			a.iv.LenMs = max(a.iv.LenMs, iv.LenMs)
			if err := mergeEncoded(a.service, iv.Hist); err != nil {
				return nil, nil, fmt.Errorf("worker %d interval %d: %w", i, j, err)
			}
			if iv.HistIntended != "" {
				if a.intended == nil {
					a.intended = latency.New()
				}
				if err := mergeEncoded(a.intended, iv.HistIntended); err != nil {
					return nil, nil, fmt.Errorf("worker %d interval %d: %w", i, j, err)
				}
			}
			t := p.Series[j]
			a.tick.T = max(a.tick.T, t.T)
			a.tick.Ops += t.Ops
			a.tick.Late += t.Late
			a.tick.RSSBytes += t.RSSBytes
			a.tick.CPU += t.CPU
			for k, v := range t.Counts {
				if a.tick.Counts == nil {
					a.tick.Counts = map[string]int64{}
				}
				a.tick.Counts[k] += v
			}
		}
	}
	starts := make([]int64, 0, len(byStart))
	for s := range byStart {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	var ticks []results.Tick
	var ivs []results.Interval
	for _, s := range starts {
		a := byStart[s]
		t := a.tick
		if a.iv.LenMs > 0 {
			t.OpsPerS = float64(t.Ops) / (time.Duration(a.iv.LenMs) * time.Millisecond).Seconds()
		}
		if a.service.TotalCount() > 0 {
			t.P50 = a.service.ValueAtQuantile(50)
			t.P99 = a.service.ValueAtQuantile(99)
			t.Max = a.service.Max()
		}
		a.iv.MaxNs = a.service.Max()
		a.iv.Hist, _ = latency.Encode(a.service)
		if a.intended != nil {
			if a.intended.TotalCount() > 0 {
				t.IntendedP99 = a.intended.ValueAtQuantile(99)
				t.IntendedMax = a.intended.Max()
			}
			a.iv.MaxIntendedNs = a.intended.Max()
			a.iv.HistIntended, _ = latency.Encode(a.intended)
		}
		ticks = append(ticks, t)
		ivs = append(ivs, a.iv)
	}
	return ticks, ivs, nil
}

// sumResources adds the workers' resources: counters and RSS summed (each
// worker is its own process, maybe on its own host), CPU percent summed
// (100 = one core busy, whichever host), the interval from the earliest
// start to the latest end.
func sumResources(rs []results.Resources) results.Resources {
	var out results.Resources
	var timed []*results.Window
	for i, r := range rs {
		if i == 0 {
			out.Before, out.After = r.Before, r.After
		} else {
			out.Before = addSnap(out.Before, r.Before, true)
			out.After = addSnap(out.After, r.After, false)
		}
		out.CPUPercent += r.CPUPercent
		out.DiskAllocated += r.DiskAllocated
		out.DiskApparent += r.DiskApparent
		out.CacheResident += r.CacheResident
		out.CacheTotal += r.CacheTotal
		out.Seconds = max(out.Seconds, r.Seconds)
		if r.Timed != nil {
			timed = append(timed, r.Timed)
		}
	}
	if len(timed) == len(rs) && len(rs) > 0 {
		w := *timed[0]
		for _, t := range timed[1:] {
			w.Before = addSnap(w.Before, t.Before, true)
			w.After = addSnap(w.After, t.After, false)
			w.CPUPercent += t.CPUPercent
			w.Seconds = max(w.Seconds, t.Seconds)
		}
		// Device counters are the machine's, not a process's: summing
		// several workers' would count one disk many times.
		w.Device, w.DeviceReadBytes, w.DeviceWriteBytes = "", 0, 0
		out.Timed = &w
	}
	return out
}

// addSnap adds b's counters to a; At is the earlier (first) or the later
// of the two.
func addSnap(a, b procstat.Snapshot, first bool) procstat.Snapshot {
	if a.At.IsZero() {
		return b // the first of a sum
	}
	at := a.At
	if first && b.At.Before(at) || !first && b.At.After(at) {
		at = b.At
	}
	a.RSSBytes += b.RSSBytes
	a.PeakRSSBytes += b.PeakRSSBytes
	a.CPUUserNs += b.CPUUserNs
	a.CPUSysNs += b.CPUSysNs
	a.ReadBytes += b.ReadBytes
	a.WriteBytes += b.WriteBytes
	a.ReadChars += b.ReadChars
	a.WriteChars += b.WriteChars
	a.IOAvailable = a.IOAvailable && b.IOAvailable
	a.Threads += b.Threads
	a.PSSBytes += b.PSSBytes
	a.Processes += b.Processes
	a.At = at
	return a
}
