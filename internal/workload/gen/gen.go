// Package gen holds the deterministic number generators workloads derive
// keys, values and choices from: everything is a pure function of the
// seed and an index, so a reader can regenerate what was written and the
// harness never holds a dataset in memory.
package gen

// SplitMix is the splitmix64 finalizer: a fast, well-mixed hash of x.
func SplitMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Mix derives one 64-bit value from several (seed, phase, index...).
func Mix(vals ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range vals {
		h = SplitMix(h ^ v)
	}
	return h
}
