// Package report renders a run (results.json) for people: Markdown tables
// shaped like the seed studies' (rows = actions, columns = engines), with
// the machine, the versions and the durability of every target.
package report

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"storebench/internal/measure/procstat"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

// document renders the whole report with a chart mark after each
// workload's tables, where report.md and report.html put that workload's
// charts (html.go); Markdown is the same without the marks.
func document(run *results.Run) string {
	run = displayed(run)
	var b strings.Builder
	title := run.Title
	if title == "" {
		title = run.Study
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	dur := run.Finished.Sub(run.Started).Round(time.Second)
	if run.Finished.IsZero() {
		dur = 0
	}
	took := "took " + dur.String()
	if run.Finished.IsZero() {
		took = "never finished"
		if run.Status == results.StatusRunning {
			took = "still under way"
		}
	}
	fmt.Fprintf(&b, "Study `%s` (%s), run %s, %s. Status: **%s**", run.Study, run.StudyFile, run.Started.Format("2006-01-02 15:04:05 MST"), took, run.Status)
	if run.Reason != "" {
		fmt.Fprintf(&b, " (%s)", run.Reason)
	}
	b.WriteString(".\n\n")
	fmt.Fprintf(&b, "Seed %d, durability **%s** for every target (%s), ladder %s, concurrency %d.\n\n",
		run.Seed, run.Durability, durabilityMeaning(run.Durability), ladder(run.Ladder), run.Concurrency)

	recommendation(&b, run)

	h := run.Host
	b.WriteString("## Machine\n\n")
	b.WriteString("| CPU | cores | RAM | kernel | OS | data directory on | Go | storebench |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %d logical / %d physical | %s | %s | %s | %s %s (%s) | %s | %s |\n\n",
		h.CPUModel, h.LogicalCPUs, h.PhysicalCores, Bytes(h.MemTotalBytes), h.Kernel, h.OS,
		run.Storage.Filesystem, run.Storage.Device, run.Storage.MountPoint, h.GoVersion, run.Storebench)

	targetsTable(&b, run)

	seen := map[string]bool{}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if !seen[s.Workload] {
				seen[s.Workload] = true
				// Each workload's tables are its own (package
				// report/section); one that registered none gets
				// the generic table of its steps and metrics.
				if d, ok := section.Lookup(s.Workload); ok && d.Render != nil {
					d.Render(&b, run)
				} else {
					generic(&b, run, s.Workload)
				}
				sweepTables(&b, run, s.Workload)
				b.WriteString(chartMark(s.Workload))
			}
		}
	}
	againstSeed(&b, run)
	streams(&b, run)
	workersAndNodes(&b, run)
	machines(&b, run)
	costs(&b, run)
	bottlenecks(&b, run)
	verification(&b, run)
	discussion(&b, run)
	return b.String()
}

// targetsTable writes the Targets section: one row per target with its
// engine (and server) version, the durability it ran at, its settings and
// status, so every figure below can be read against what was configured.
func targetsTable(b *strings.Builder, run *results.Run) {
	b.WriteString("## Targets\n\n| target | engine version | durability | settings | status |\n|---|---|---|---|---|\n")
	for _, t := range run.Targets {
		status := t.Status
		if t.Reason != "" {
			status += ": " + t.Reason
		}
		if na := naSummary(t); na != "" {
			status += "; " + na
		}
		version, set := t.Version, settings(t.Settings)
		if t.Server != nil {
			kind := "external server " + t.Server.URI
			if t.Server.Managed {
				kind = fmt.Sprintf("server %s %s, started by storebench", t.Server.Name, t.Server.Version)
			}
			version = fmt.Sprintf("%s (client %s)", kind, t.Version)
			if len(t.Server.Settings) > 0 {
				set = settings(t.Server.Settings) + "; client: " + set
			}
		}
		durability := t.Settings["durability"]
		if t.Server != nil && t.Server.Settings["durability"] != "" {
			durability = t.Server.Settings["durability"]
		}
		if note := t.Settings["durability_default"]; note != "" {
			durability = "engine default: " + note + "; run as " + durability
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", t.Title, cell(version), cell(durability), set, cell(status))
	}
	b.WriteString("\n")
}

func durabilityMeaning(d string) string {
	if d == "default" {
		return "each engine as it ships, the seeds' method: the Targets table says what each default is and the class it falls in"
	}
	if d == "async" {
		return "writes are not fsynced on return; a crash may lose the last ones"
	}
	return "every write batch is fsynced before it returns"
}

func ladder(l []int64) string {
	var parts []string
	for _, n := range l {
		parts = append(parts, Count(n))
	}
	return strings.Join(parts, ", ")
}

func settings(m map[string]string) string {
	var keys []string
	for k := range m {
		// (An empty value is a setting that does not apply: Redis's
		// flush_interval under appendfsync always.)
		if k != "durability" && k != "durability_default" && k != "durability_class" && m[k] != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+": "+m[k])
	}
	return cell(strings.Join(parts, "; "))
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string { return section.Cell(s) }

func verification(b *strings.Builder, run *results.Run) {
	b.WriteString("## Verification\n\nEvery value read is checked against what was written (regenerated from the seed, never held in memory).\n\n| target | values checked | failures | first failure |\n|---|---|---|---|\n")
	for _, t := range run.Targets {
		var checked, failed int64
		first := ""
		for _, s := range t.Steps {
			checked += s.Verify.Checked
			failed += s.Verify.Failed
			if first == "" {
				first = s.Verify.First
			}
		}
		if t.Status == "unavailable" {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s |\n", t.Title, checked, failed, cell(first))
	}
	b.WriteString("\n")
}

// Table is a simple row-major Markdown table.
type Table = section.Table

// Seconds prints a duration in seconds with 3–4 significant digits.
func Seconds(s float64) string { return section.Seconds(s) }

// Latency prints nanoseconds in the unit that suits them.
func Latency(ns int64) string { return section.Latency(ns) }

// Bytes prints a size with binary units.
func Bytes(b int64) string { return section.Bytes(b) }

// Count prints 100000 as 1e5 and 1500 as 1500.
func Count(n int64) string { return section.Count(n) }

// Mem is a snapshot's memory: PSS for a process tree, RSS for a process.
func Mem(s procstat.Snapshot) int64 { return section.Mem(s) }

// displayed is a copy of run whose every string is inert in Markdown
// (mdInert) and holds no control character (results.EscapeControl): a
// results.json is shared, and its writer chose its title, its targets'
// titles and settings, the CPU model, every reason. The report is
// Markdown, printed to the terminal and written to report.md, whose
// reader renders raw HTML and fetches images; run is not changed.
func displayed(run *results.Run) *results.Run {
	v := results.MapStrings(reflect.ValueOf(run), func(s string) string {
		return mdInert(results.EscapeControl(s))
	})
	return v.Interface().(*results.Run)
}

// mdInert keeps text from a run from being Markdown syntax that reaches
// outside it: raw HTML and autolinks (a "<" that opens a tag is an
// entity, "&lt;"), and
// images and inline links ("![" and "](" have their bracket as an
// entity). An entity is text even after a backslash, and no entity is
// Markdown syntax. Code spans in the text stay code spans.
func mdInert(s string) string {
	if !strings.ContainsAny(s, "<[(") {
		return s
	}
	// A "<" opens raw HTML or an autolink only before a letter, "/", "!"
	// or "?": "86119/s < 99%" stays as it reads.
	s = htmlOpen.ReplaceAllString(s, "&lt;$1")
	return mdInertReplacer.Replace(s)
}

var (
	htmlOpen        = regexp.MustCompile(`<([A-Za-z/!?])`)
	mdInertReplacer = strings.NewReplacer("![", "!&#91;", "](", "]&#40;")
)
