package section

import (
	"fmt"
	"strings"

	"storebench/internal/results"
)

// FaultWindow is a part of a step under faults: before the first action,
// from it until the last action is over (a restart: the node back in the
// cluster), or after.
type FaultWindow struct {
	Name      string
	Seconds   float64
	Ops, Errs int64 // Errs: the series' per-second "errors" counts
}

// FaultWindows splits the step's per-second series at its fault events
// into the three windows before, during and after. A step without events
// has every second before.
func FaultWindows(s *results.Step) [3]FaultWindow {
	first, last := 0.0, 0.0
	if len(s.Events) > 0 {
		first = s.Events[0].OffsetS
		last = first
		for _, e := range s.Events {
			last = max(last, e.OffsetS+e.TookSeconds)
		}
	} else {
		first, last = s.Seconds, s.Seconds
	}
	w := [3]FaultWindow{
		{Name: fmt.Sprintf("before (0–%.0f s)", first)},
		{Name: fmt.Sprintf("during (%.0f–%.0f s)", first, last)},
		{Name: fmt.Sprintf("after (%.0f s–end)", last)},
	}
	prev := 0.0
	for _, k := range s.Series {
		i := 1
		switch {
		case k.T <= first:
			i = 0
		case k.T-1 >= last:
			i = 2
		}
		w[i].Ops += k.Ops
		w[i].Errs += k.Counts["errors"]
		w[i].Seconds += k.T - prev
		prev = k.T
	}
	return w
}

// WriteFaults writes a step's fault events (time into the phase, action,
// node, how long it took, its error) and the throughput and errors of
// the windows before, during and after them. perOp scales an operation
// to the unit the throughput is shown in (1 for operations; a batch's
// points for a workload that counts batches).
func WriteFaults(b *strings.Builder, s *results.Step, unit string, perOp float64) {
	ev := Table{Head: []string{"Time into the phase", "Action", "Node", "Took", "Error"}}
	for _, e := range s.Events {
		ev.Rows = append(ev.Rows, []string{fmt.Sprintf("%.1f s", e.OffsetS), e.Action, e.NodeName, fmt.Sprintf("%.1f s", e.TookSeconds), e.Error})
	}
	ev.Write(b)
	tab := Table{Head: []string{"Window", "Seconds", "Throughput", "Errors"}}
	for _, w := range FaultWindows(s) {
		if w.Seconds <= 0 {
			tab.Rows = append(tab.Rows, []string{w.Name, "0", "— (the phase had ended)", "—"})
			continue
		}
		tab.Rows = append(tab.Rows, []string{w.Name, fmt.Sprintf("%.0f", w.Seconds), fmt.Sprintf("%.0f %s", float64(w.Ops)*perOp/w.Seconds, unit), fmt.Sprint(w.Errs)})
	}
	tab.Write(b)
}
