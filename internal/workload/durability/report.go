package durability

import (
	"fmt"
	"strings"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

func init() {
	section.Register("durability", section.Def{
		Render: render,
		Metrics: []section.Metric{
			{Name: "trials", Agg: section.Sum, What: "crashes (K)"},
			{Name: "acked", Agg: section.Sum, What: "acknowledged writes, all trials"},
			{Name: "unacked", Agg: section.Sum, What: "writes in flight at the crash (sent, not acknowledged)"},
			{Name: "lost", Agg: section.Sum, Better: section.Lower, What: "acknowledged writes absent after the restart"},
			{Name: "lost_trials", Agg: section.Sum, Better: section.Lower, What: "trials that lost an acknowledged write"},
			{Name: "corrupted", Agg: section.Sum, Better: section.Lower, What: "records read back with a wrong checksum or content"},
			{Name: "torn", Agg: section.Sum, Better: section.Lower, What: "atomic batches found in part"},
			{Name: "phantom", Agg: section.Sum, What: "unacknowledged writes found after the restart (allowed)"},
			{Name: "unrecoverable", Agg: section.Sum, Better: section.Lower, What: "trials whose engine could not open its data after the crash (all acknowledged writes lost)"},
			{Name: "lazyfs_retries", Agg: section.Sum, What: "trials run again because LazyFS itself exited"},
			{Name: "close_errors", Agg: section.Sum, What: "trials whose engine failed to close after the read-back"},
			{Name: "acked_span_s_min", Unit: "s", Agg: section.Mean, What: "first acknowledged write to the crash, shortest trial"},
			{Name: "acked_span_s_median", Unit: "s", Agg: section.Mean, What: "first acknowledged write to the crash, median trial"},
			{Name: "lost_age_s_max", Unit: "s", Agg: section.Max, Better: section.Lower, What: "how long before the crash the oldest lost acknowledged write was acknowledged, worst trial (as long as the span: everything lost)"},
			{Name: "lost_age_s_median", Unit: "s", Agg: section.Max, Better: section.Lower, What: "the loss window: how long before the crash the oldest lost acknowledged write was acknowledged, median trial (0: none lost)"},
			{Name: MetricPromised, Unit: "s", Agg: section.Max, What: "the longest the server promises to hold an acknowledged write unsynced (its timer's interval)"},
			{Name: "fs_dropped_bytes", Unit: "B", Agg: section.Sum, What: "bytes written and not synced that the power-loss file system dropped, all trials"},
			{Name: "recovery_s_median", Unit: "s", Agg: section.Max, Better: section.Lower, What: "restart to the first successful read, median"},
			{Name: "recovery_s_max", Unit: "s", Agg: section.Max, Better: section.Lower, What: "restart to the first successful read, worst"},
		},
	})
}

// Verdict says what a step's figures mean: a target that declared sync
// and lost an acknowledged write (or tore a batch, or corrupted a record)
// failed; under async a loss is what the class allows.
func Verdict(s *results.Step) string {
	m := s.Metrics
	class := s.Facts["durability"]
	if s.Facts[FactRefused] != "" {
		return "no verdict"
	}
	bad := m["lost"] > 0 || m["torn"] > 0 || m["corrupted"] > 0
	switch {
	case s.Facts[FactPersistence] != "" && m["torn"] == 0 && m["corrupted"] == 0:
		if m["lost"] > 0 {
			return "lost everything: no persistence, by design (not a failure)"
		}
		return "none lost (no persistence)"
	case bad && class == string(kv.Sync) && s.Facts[FactDeclared] != "" && m["torn"] == 0 && m["corrupted"] == 0:
		return fmt.Sprintf("lost writes in %.0f of %.0f trials, as the server declared (its writes are async: it cannot fsync per write)", m["lost_trials"], m["trials"])
	case bad && class == string(kv.Sync):
		return fmt.Sprintf("**FAILED: declared sync, lost acknowledged writes in %.0f of %.0f trials**", m["lost_trials"], m["trials"])
	case m["torn"] > 0 || m["corrupted"] > 0:
		return "**FAILED: torn or corrupted records**"
	case WindowExceeded(m):
		return fmt.Sprintf("**FAILED: promised at most %s, lost writes %s old**", section.Seconds(m[MetricPromised]), section.Seconds(m["lost_age_s_max"]))
	case m["lost"] > 0 && m[MetricPromised] > 0:
		return fmt.Sprintf("lost the last %s at worst, within its promise (%s; flagged beyond twice that)", section.Seconds(m["lost_age_s_max"]), section.Seconds(m[MetricPromised]))
	case m["lost"] > 0:
		return "lost writes (allowed by async)"
	}
	return "none lost"
}

// recoveryCell is the recovery time, median / worst, over the trials
// whose restart read the data back: "—" when none did (an engine that
// never reopened has no recovery time, not one of 0 s).
func recoveryCell(m map[string]float64) string {
	med, ok := m["recovery_s_median"]
	if !ok || (m["trials"] > 0 && m["unrecoverable"] >= m["trials"]) {
		// (Runs before 2026-11-28 counted a trial that never reopened
		// as a recovery of 0 s.)
		return "—"
	}
	return fmt.Sprintf("%s / %s", section.Seconds(med), section.Seconds(m["recovery_s_max"]))
}

// render writes the table "acknowledged writes lost after power failure /
// after kill -9": a row per target and durability class.
func render(b *strings.Builder, run *results.Run) {
	ts := section.Participants(run, "durability")
	if len(ts) == 0 {
		return
	}
	b.WriteString("## Acknowledged writes lost after power failure / after kill -9\n\n")
	model, windows := "", false
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload != "durability" {
				continue
			}
			if s.Facts[FactModel] != "" {
				model = s.Facts[FactModel]
			}
			// Every step measures its loss window since storebench's
			// own file system, a kill -9 step too.
			if _, ok := s.Metrics["lost_age_s_median"]; ok {
				windows = true
			}
		}
	}
	if model == "" && !windows {
		// Runs before storebench's own file system (2026-11-28).
		b.WriteString("Each trial: concurrent writers of checksummed records (single puts and atomic batches), every acknowledgement logged outside the engine's process; then SIGKILL of that process (kill -9), or SIGKILL and LazyFS dropping every write not fsynced (power failure); restart, and every record read back. " +
			"Lost: acknowledged and absent, of all acknowledged writes over K trials (in how many trials). Torn: atomic batches found in part. Phantom: unacknowledged writes found (allowed). Writes span / oldest lost: from the first acknowledgement to the crash (median trial), and how long before the crash the oldest lost write was acknowledged (worst trial): a policy that fsyncs once a second loses everything when the writes span less than a second. Recovery: restart to the first successful read, median / worst.\n\n")
		renderRows(b, ts, section.Table{Head: []string{"Target", "Durability", "Crash", "K", "Lost / acknowledged", "Corrupted", "Torn batches", "Phantom", "Writes span / oldest lost", "Recovery", "Verdict"}, Left: 3}, false)
		return
	}
	crash := "SIGKILL of that process (kill -9)"
	if model != "" {
		crash = fmt.Sprintf("SIGKILL of that process (kill -9), or SIGKILL and storebench's power-loss file system putting back every write not synced (power failure; crash model %q: %s)", model, modelSays(model))
	}
	fmt.Fprintf(b, "Each trial: concurrent writers of checksummed records (single puts and atomic batches), every acknowledgement logged outside the engine's process; then %s; restart, and every record read back. "+
		"Loss window: how long before the crash the oldest lost acknowledged write was made, median / worst trial (none lost: 0); a server that fsyncs on a timer promises at most its interval (shown), and writes for three intervals or more before a crash at a seeded instant in a power-loss trial, so that the window shows what it kept; a window past twice the promise is flagged. "+
		"Lost: acknowledged and absent, of all acknowledged writes over K trials (in how many trials). Torn: atomic batches found in part. Phantom: unacknowledged writes found (allowed). Writes span: from the first acknowledgement to the crash, median trial. Recovery: restart to the first successful read, median / worst.\n\n", crash)
	renderRows(b, ts, section.Table{Head: []string{"Target", "Durability", "Crash", "K", "Loss window (promised)", "Lost / acknowledged", "Corrupted", "Torn batches", "Phantom", "Writes span", "Recovery", "Verdict"}, Left: 3}, true)
}

// modelSays is what a crash model loses, in words.
func modelSays(model string) string {
	if model == "metadata" {
		return "what was not fsynced is lost, and so is a file created, renamed, truncated or removed in a directory not fsynced since"
	}
	return "what was not fsynced is lost, the namespace persists"
}

// renderRows writes a row per target and step into tab: with the loss
// window first (window) or, for runs before it, the span / oldest lost.
func renderRows(b *strings.Builder, ts []*results.Target, tab section.Table, window bool) {
	for _, t := range ts {
		any := false
		for _, s := range t.Steps {
			if s.Workload != "durability" {
				continue
			}
			any = true
			m := s.Metrics
			class := s.Facts["durability"]
			if class == "" {
				class = s.Labels[LClass]
			}
			row := []string{section.Cell(t.Title), class, crashTitle(s.Phase)}
			pad := 0
			if window {
				pad = 1
			}
			if s.Error != "" {
				row = append(row, "—", "failed: "+section.Cell(s.Error))
				row = append(row, make([]string, 6+pad)...)
				tab.Rows = append(tab.Rows, row)
				continue
			}
			if why := s.Facts[FactRefused]; why != "" {
				row = append(row, "0", "not run: "+section.Cell(clip(why, 200)))
				row = append(row, make([]string, 5+pad)...)
				row = append(row, "no verdict")
				tab.Rows = append(tab.Rows, row)
				continue
			}
			row = append(row, fmt.Sprintf("%.0f", m["trials"]))
			if window {
				row = append(row, lossWindowCell(m))
			}
			row = append(row,
				fmt.Sprintf("%s / %s (%.0f trials)", section.Count(int64(m["lost"])), section.Count(int64(m["acked"])), m["lost_trials"]),
				fmt.Sprintf("%.0f", m["corrupted"]), fmt.Sprintf("%.0f", m["torn"]), fmt.Sprintf("%.0f", m["phantom"]))
			if window {
				row = append(row, section.Seconds(m["acked_span_s_median"]))
			} else {
				row = append(row, windowCell(m))
			}
			row = append(row, recoveryCell(m), Verdict(s))
			if n := m["unrecoverable"]; n > 0 {
				row[len(row)-1] += fmt.Sprintf("; **did not reopen its data in %.0f trials**: %s", n, section.Cell(clip(s.Facts["unrecoverable"], 160)))
			}
			if n := m["lazyfs_retries"]; n > 0 {
				row[len(row)-1] += fmt.Sprintf("; %.0f trials run again because LazyFS itself exited", n)
			}
			if n := m["close_errors"]; n > 0 {
				row[len(row)-1] += fmt.Sprintf("; failed to close after the read-back in %.0f trials: %s", n, section.Cell(clip(s.Facts["close_error"], 160)))
			}
			if mp := s.Facts[FactMapping]; mp != "" {
				// "async: appendonly yes, appendfsync everysec (why)":
				// the settings, without the why.
				mp, _, _ = strings.Cut(mp, " (")
				if _, how, ok := strings.Cut(mp, ": "); ok {
					row[1] += " (" + section.Cell(how) + ")"
				}
			}
			if s.Facts["test_nosync"] != "" {
				row[1] += " (test: fsync off)"
			}
			tab.Rows = append(tab.Rows, row)
		}
		if !any {
			tab.Rows = append(tab.Rows, section.NARow(section.Cell(t.Title), t.NotApplicable("durability", "", -1), len(tab.Head)-1))
		}
	}
	tab.Write(b)
}

// lossWindowCell is the loss window, median / worst, and what the server
// promised: "none lost", "0 s / 0.84 s (≤ 1 s)".
func lossWindowCell(m map[string]float64) string {
	out := "none lost"
	if m["lost"] > 0 {
		out = section.Seconds(m["lost_age_s_median"]) + " / " + section.Seconds(m["lost_age_s_max"])
	}
	if p := m[MetricPromised]; p > 0 {
		out += " (≤ " + section.Seconds(p) + ")"
	}
	return out
}

// windowCell is "span / oldest lost" (results from before the loss window
// was measured have neither: "—").
func windowCell(m map[string]float64) string {
	span, ok := m["acked_span_s_median"]
	if !ok {
		return "—"
	}
	lost := "none lost"
	if m["lost"] > 0 {
		lost = section.Seconds(m["lost_age_s_max"])
	}
	return section.Seconds(span) + " / " + lost
}

func crashTitle(phase string) string {
	switch phase {
	case fault.PowerLoss:
		return "power failure"
	case fault.Kill9:
		return "kill -9"
	}
	return phase
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
