package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/study"
)

// Estimate is what a run will cost, worked out before anything starts
// from the study's own figure of what one ladder item costs
// (study.Estimate: a seed's, say) and the steps planned: sizes a seed ran
// (1e8 transactions, days) may not fit this machine, and a user should
// learn that up front rather than from a full disk hours in.
type Estimate struct {
	Targets int
	// Items are the items the fresh steps write, per target; Time is the
	// writing of them on every target at the study's item time (0 when
	// the study gives none).
	Items int64
	Time  time.Duration
	// Disk is the largest database one target holds (targets run one
	// after another, each one's data removed before the next unless
	// KeepData), its ladder step and what later steps add to it
	// (recordsOf): at the study's item disk, or twice the item's bytes.
	Disk int64
	// Free is the free space where the data goes, on Mount.
	Free  int64
	Mount string
	// Over says why the run does not fit ("" when it does).
	Over string
}

// longestRun is the run time past which an estimate asks to be accepted
// when the study sets no time limit: a run of more than a day is not one
// to start by accident.
const longestRun = 24 * time.Hour

// EstimateRun works out what the planned run costs and whether it fits:
// its disk in the free space of outDir's filesystem and in limits.disk,
// its time in limits.time (or a day, without one).
func EstimateRun(s *study.Study, p *Plan, outDir string, keepData bool) Estimate {
	e := Estimate{Targets: len(s.Targets)}
	var largest, itemBytes int64
	for _, st := range p.Steps {
		if !st.Fresh {
			continue
		}
		e.Items += st.N
		if st.N > largest {
			largest, itemBytes = st.N, st.ItemBytes
		}
	}
	per := int64(s.Estimate.ItemDisk)
	if per == 0 {
		per = 2 * itemBytes
	}
	// The largest database: its ladder step and what later steps add.
	e.Disk = recordsOf(s, p.Steps) * per
	if keepData {
		e.Disk *= int64(max(e.Targets, 1))
	}
	if s.Estimate.ItemTime > 0 {
		e.Time = time.Duration(float64(e.Items) * float64(e.Targets) * float64(s.Estimate.ItemTime))
	}
	dir := outDir
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	var over []string
	if sp, err := statSpace(dir); err == nil {
		e.Free, e.Mount = sp.Free, sp.Mount
		if e.Disk > sp.Free {
			over = append(over, fmt.Sprintf("%s free on %s", human(sp.Free), sp.Mount))
		}
	}
	if lim := int64(s.Limits.Disk); lim > 0 && e.Disk > lim {
		over = append(over, "limits.disk "+human(lim))
	}
	switch lim := time.Duration(s.Limits.Time); {
	case lim > 0 && e.Time > lim:
		over = append(over, "limits.time "+lim.String())
	case lim == 0 && e.Time > longestRun:
		over = append(over, "more than a day")
	}
	e.Over = strings.Join(over, ", ")
	return e
}

// String is the estimate in one line, with where its figures come from.
func (e Estimate) String(s *study.Study) string {
	var b strings.Builder
	if e.Time > 0 {
		fmt.Fprintf(&b, "about %s", days(e.Time))
		b.WriteString(" and ")
	}
	fmt.Fprintf(&b, "%s of disk for the largest database", humanF(float64(e.Disk)))
	fmt.Fprintf(&b, " (%d targets; %s items written per target", e.Targets, study.FormatCount(e.Items))
	if s.Estimate.ItemTime > 0 || s.Estimate.ItemDisk > 0 {
		fmt.Fprintf(&b, " at %s and %s an item", time.Duration(s.Estimate.ItemTime), human(int64(s.Estimate.ItemDisk)))
		if s.Estimate.Source != "" {
			b.WriteString(", " + s.Estimate.Source)
		}
	}
	b.WriteString(")")
	return b.String()
}

// days prints a long duration in the largest unit that reads well.
func days(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= 2*time.Minute:
		return fmt.Sprintf("%.0f min", d.Minutes())
	}
	return d.Round(time.Second).String()
}
