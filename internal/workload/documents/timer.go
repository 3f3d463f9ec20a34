package documents

import (
	"container/heap"
	"math"
	"sort"
	"time"

	"storebench/internal/results"
	"storebench/internal/workload/gen"
)

// mongodb-performance-test times every operation with a Dropwizard
// Metrics Timer (metrics-core 4.2) and prints its ConsoleReporter
// figures. They are reproduced here as that library computes them, so a
// figure of ours reads like the seed's:
//
//   - the rates are a Meter's: the mean rate (count over the elapsed
//     time) and the 1-, 5- and 15-minute exponentially weighted moving
//     averages, ticked every 5 s with alpha = 1 - exp(-5 s / 60 s / m),
//     the first tick setting the rate to that interval's rate; operations
//     of a last interval shorter than 5 s are not in them (the library
//     ticks only whole intervals).
//   - the distribution is an ExponentiallyDecayingReservoir's: a sample of
//     1028 operations, favouring recent ones (alpha 0.015 per second),
//     from which min, max, mean, stddev and the quantiles are weighted.
//     It is a sample: the HDR figures beside it hold every operation.

// EWMA constants of a Dropwizard Meter.
const (
	ewmaTick = 5 * time.Second
)

// ewmaAlpha is the smoothing factor of a moving average over minutes.
func ewmaAlpha(minutes float64) float64 {
	return 1 - math.Exp(-ewmaTick.Seconds()/60/minutes)
}

// Rates computes the 1-, 5- and 15-minute rates (operations per second)
// from a step's per-tick series (1 s ticks, each tick's T its end in
// seconds from the start of the run): the operations of each whole 5 s
// interval feed the averages in order.
func Rates(series []results.Tick) (m1, m5, m15 float64) {
	if len(series) == 0 {
		return 0, 0, 0
	}
	elapsed := series[len(series)-1].T
	windows := int(math.Floor(elapsed/ewmaTick.Seconds() + 1e-9))
	counts := make([]int64, windows)
	for _, t := range series {
		// The tick's start falls in its window (ticks never straddle one:
		// 5 s is a whole number of 1 s ticks).
		w := int(math.Floor((t.T - 1e-9) / ewmaTick.Seconds()))
		if w < windows {
			counts[w] += t.Ops
		}
	}
	var out [3]float64
	for i, m := range []float64{1, 5, 15} {
		a := ewmaAlpha(m)
		rate, init := 0.0, false
		for _, n := range counts {
			instant := float64(n) / ewmaTick.Seconds()
			if init {
				rate += a * (instant - rate)
			} else {
				rate, init = instant, true
			}
		}
		out[i] = rate
	}
	return out[0], out[1], out[2]
}

// Reservoir constants of Dropwizard's ExponentiallyDecayingReservoir.
const (
	reservoirSize  = 1028
	reservoirAlpha = 0.015
	rescaleAfter   = time.Hour
)

type sampleItem struct {
	priority float64
	value    int64
	weight   float64
}

type sampleHeap []sampleItem

func (h sampleHeap) Len() int           { return len(h) }
func (h sampleHeap) Less(i, j int) bool { return h[i].priority < h[j].priority }
func (h sampleHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sampleHeap) Push(x any)        { *h = append(*h, x.(sampleItem)) }
func (h *sampleHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// reservoir is a forward-decaying priority sample of durations, as the
// library keeps it (priority = weight / u, the 1028 highest kept). Each
// load goroutine keeps one of its own (the library's one reservoir has a
// lock that every operation takes); mergeReservoirs joins them after the
// run. The highest priorities of the union are the highest of each
// part's, so the merged sample is the one a single reservoir would keep.
type reservoir struct {
	items       sampleHeap
	start       time.Time // landmark, in whole seconds
	nextRescale time.Time
	rnd         uint64
}

func newReservoir(seed uint64) *reservoir {
	now := time.Now().Truncate(time.Second)
	return &reservoir{start: now, nextRescale: now.Add(rescaleAfter), rnd: gen.Mix(seed, 0x726573)}
}

func (r *reservoir) update(d time.Duration, at time.Time) {
	if at.After(r.nextRescale) {
		r.rescale(at)
	}
	// The library weighs by whole seconds since the landmark.
	w := math.Exp(reservoirAlpha * math.Floor(at.Sub(r.start).Seconds()))
	r.rnd = gen.SplitMix(r.rnd)
	u := (float64(r.rnd>>11) + 1) / (1 << 53) // (0, 1]
	it := sampleItem{priority: w / u, value: d.Nanoseconds(), weight: w}
	if len(r.items) < reservoirSize {
		heap.Push(&r.items, it)
		return
	}
	if r.items[0].priority < it.priority {
		r.items[0] = it
		heap.Fix(&r.items, 0)
	}
}

// rescale moves the landmark forward so weights do not overflow, as the
// library does every hour.
func (r *reservoir) rescale(at time.Time) {
	old := r.start
	r.start = at.Truncate(time.Second)
	r.nextRescale = r.start.Add(rescaleAfter)
	f := math.Exp(-reservoirAlpha * r.start.Sub(old).Seconds())
	for i := range r.items {
		r.items[i].priority *= f
		r.items[i].weight *= f
	}
	heap.Init(&r.items)
}

// snapshot is the library's WeightedSnapshot of the sample.
type snapshot struct {
	values  []int64
	weights []float64 // normalised
	quant   []float64 // cumulative weight before each value
}

func (r *reservoir) snapshot() snapshot {
	items := append([]sampleItem(nil), r.items...)
	sort.Slice(items, func(i, j int) bool { return items[i].value < items[j].value })
	var s snapshot
	sum := 0.0
	for _, it := range items {
		sum += it.weight
	}
	acc := 0.0
	for _, it := range items {
		s.values = append(s.values, it.value)
		w := 0.0
		if sum > 0 {
			w = it.weight / sum
		}
		s.weights = append(s.weights, w)
		s.quant = append(s.quant, acc)
		acc += w
	}
	return s
}

// value at quantile q (0..1), as WeightedSnapshot.getValue picks it.
func (s snapshot) value(q float64) float64 {
	if len(s.values) == 0 {
		return 0
	}
	pos := sort.SearchFloat64s(s.quant, q)
	if pos >= len(s.quant) || s.quant[pos] != q {
		pos-- // the last cumulative weight below q
	}
	if pos < 1 {
		return float64(s.values[0])
	}
	if pos >= len(s.values) {
		return float64(s.values[len(s.values)-1])
	}
	return float64(s.values[pos])
}

func (s snapshot) mean() float64 {
	m := 0.0
	for i, v := range s.values {
		m += float64(v) * s.weights[i]
	}
	return m
}

func (s snapshot) stddev() float64 {
	if len(s.values) <= 1 {
		return 0
	}
	m := s.mean()
	v := 0.0
	for i, x := range s.values {
		d := float64(x) - m
		v += s.weights[i] * d * d
	}
	return math.Sqrt(v)
}

// timerMetrics are the figures the tool prints for a mode, as typed
// metrics (rates in calls/s, durations in ns).
func timerMetrics(st *results.Step, rv *reservoir) map[string]float64 {
	m1, m5, m15 := Rates(st.Series)
	s := rv.snapshot()
	out := map[string]float64{
		"count":   float64(st.Ops),
		"m1_rate": m1, "m5_rate": m5, "m15_rate": m15,
	}
	if st.Seconds > 0 {
		out["mean_rate"] = float64(st.Ops) / st.Seconds
	}
	if len(s.values) > 0 {
		out["min_ns"] = float64(s.values[0])
		out["max_ns"] = float64(s.values[len(s.values)-1])
		out["mean_ns"] = s.mean()
		out["stddev_ns"] = s.stddev()
		out["median_ns"] = s.value(0.5)
		out["p75_ns"] = s.value(0.75)
		out["p95_ns"] = s.value(0.95)
		out["p98_ns"] = s.value(0.98)
		out["p99_ns"] = s.value(0.99)
		out["p999_ns"] = s.value(0.999)
	}
	return out
}

// newReservoirs has one reservoir per load goroutine, each with a random
// stream of its own.
func newReservoirs(seed uint64, goroutines int) []*reservoir {
	rs := make([]*reservoir, goroutines)
	for w := range rs {
		rs[w] = newReservoir(gen.Mix(seed, uint64(w)))
	}
	return rs
}

// mergeReservoirs joins per-goroutine reservoirs into one: priorities and
// weights brought to the latest landmark, the reservoirSize highest kept.
func mergeReservoirs(rs []*reservoir) *reservoir {
	m := &reservoir{}
	for _, r := range rs {
		if r.start.After(m.start) {
			m.start, m.nextRescale = r.start, r.nextRescale
		}
	}
	for _, r := range rs {
		f := math.Exp(-reservoirAlpha * m.start.Sub(r.start).Seconds())
		for _, it := range r.items {
			it.priority *= f
			it.weight *= f
			if len(m.items) < reservoirSize {
				heap.Push(&m.items, it)
			} else if m.items[0].priority < it.priority {
				m.items[0] = it
				heap.Fix(&m.items, 0)
			}
		}
	}
	return m
}
