package workload

// Tally counts per load goroutine, each count on a cache line of its own,
// summed once the goroutines are done: a count that every operation adds
// to (verified reads) must not make the goroutines wait for one shared
// cache line.
type Tally []tallySlot

type tallySlot struct {
	n int64
	_ [56]byte
}

// NewTally has a count for each of workers goroutines.
func NewTally(workers int) Tally { return make(Tally, workers) }

// Add adds n to goroutine w's count; only goroutine w may call it.
func (t Tally) Add(w int, n int64) { t[w].n += n }

// Sum is the total; call it after the goroutines have ended.
func (t Tally) Sum() int64 {
	var s int64
	for i := range t {
		s += t[i].n
	}
	return s
}

// Of is goroutine w's count; call it after the goroutines have ended.
func (t Tally) Of(w int) int64 { return t[w].n }
