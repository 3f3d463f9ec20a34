package worker

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"

	"storebench/internal/wire"
)

// profiler records the pprof profiles a step asked for (wire.ProfileKinds).
// Mutex and block sampling is on only between start and stop: it costs the
// load goroutines time, so a run that does not ask pays nothing.
//
// The runtime keeps mutex and block records for the life of the process,
// so a step's mutex or block profile covers every profiled step of this
// worker up to its end; `go tool pprof -base` with the previous step's
// profile gives one step's share. The CPU profile is the step's alone.
type profiler struct {
	kinds []string
	cpu   bytes.Buffer
}

// startProfile checks kinds and starts what they ask for.
func startProfile(kinds []string) (*profiler, error) {
	p := &profiler{}
	for _, k := range kinds {
		if !slices.Contains(wire.ProfileKinds, k) {
			return nil, fmt.Errorf("unknown profile %q (want %v)", k, wire.ProfileKinds)
		}
		if !slices.Contains(p.kinds, k) {
			p.kinds = append(p.kinds, k)
		}
	}
	for _, k := range p.kinds {
		switch k {
		case "cpu":
			if err := pprof.StartCPUProfile(&p.cpu); err != nil {
				p.stop()
				return nil, fmt.Errorf("cpu profile: %w", err)
			}
		case "mutex":
			// Every contention event, not a sample: the question is
			// whether anything serializes the load goroutines at all.
			runtime.SetMutexProfileFraction(1)
		case "block":
			runtime.SetBlockProfileRate(1)
		}
	}
	return p, nil
}

// stop ends the profiles and returns them by kind, in pprof's format.
func (p *profiler) stop() map[string][]byte {
	out := map[string][]byte{}
	for _, k := range p.kinds {
		switch k {
		case "cpu":
			pprof.StopCPUProfile()
			if p.cpu.Len() > 0 {
				out[k] = p.cpu.Bytes()
			}
		case "mutex", "block":
			var b bytes.Buffer
			if err := pprof.Lookup(k).WriteTo(&b, 0); err == nil {
				out[k] = b.Bytes()
			}
			if k == "mutex" {
				runtime.SetMutexProfileFraction(0)
			} else {
				runtime.SetBlockProfileRate(0)
			}
		}
	}
	return out
}
