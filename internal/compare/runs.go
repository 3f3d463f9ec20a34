package compare

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"storebench/internal/report"
	"storebench/internal/results"
)

// Run is one run directory as compare sees it: a verdict between two
// sides means something only when their runs measured the same thing
// the same way, so the runs are checked against each other first.
type Run struct {
	// Label names the run in messages and tables: A and B, or A1, A2…
	// when a side is several runs.
	Label string
	Path  string
	Run   *results.Run
	// Study is the study as the run ran it (study.yaml of the run
	// directory: scale and --set overrides applied), or the text as given
	// (results.json's study_source) when that file is missing.
	Study string
}

// Difference is one setting in which the runs are not all the same:
// Values[i] is runs[i]'s.
type Difference struct {
	What   string
	Values []string
}

// Incomparable says why the runs cannot be compared (nil: they can):
// one is a run of another study, or ran other workloads, than the first.
// Every such difference is named.
func Incomparable(runs []Run) error {
	if len(runs) < 2 {
		return nil
	}
	var why []string
	first := runs[0]
	for _, r := range runs[1:] {
		if r.Run.Study != first.Run.Study {
			why = append(why, fmt.Sprintf("%s is a run of study %q, %s of study %q", first.Label, first.Run.Study, r.Label, r.Run.Study))
			continue
		}
		if wa, wb := strings.Join(workloads(first), ", "), strings.Join(workloads(r), ", "); wa != wb {
			why = append(why, fmt.Sprintf("%s ran workloads %s, %s ran %s", first.Label, wa, r.Label, wb))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("the runs are not comparable: %s", strings.Join(why, "; "))
}

// workloads are the names of the workloads a run's study has, sorted;
// without a readable study, those its steps ran.
func workloads(r Run) []string {
	set := map[string]bool{}
	for _, e := range studyWorkloads(r.Study) {
		set[e.name] = true
	}
	if len(set) == 0 {
		for _, t := range r.Run.Targets {
			for _, s := range t.Steps {
				set[s.Workload] = true
			}
		}
	}
	var out []string
	for w := range set {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

type workloadEntry struct {
	name   string
	fields map[string]any
}

// studyWorkloads are the workload entries of a study's YAML text.
func studyWorkloads(text string) []workloadEntry {
	var doc struct {
		Workloads []map[string]any `yaml:"workloads"`
	}
	if yaml.Unmarshal([]byte(text), &doc) != nil {
		return nil
	}
	var out []workloadEntry
	for _, w := range doc.Workloads {
		name, _ := w["name"].(string)
		if name == "" {
			continue
		}
		out = append(out, workloadEntry{name, w})
	}
	return out
}

// studySettings flattens what a study sets, beyond what results.json
// records on its own (name, seed, durability, concurrency, ladder,
// targets), into dotted keys: a workload's parameters as `--set` names
// them (ledger.stress.rate), its other fields (ledger.concurrency,
// ledger.sweep.rate.max_trials), and the study's other sections
// (limits.target_time).
func studySettings(text string) map[string]string {
	out := map[string]string{}
	var doc map[string]any
	if yaml.Unmarshal([]byte(text), &doc) != nil {
		return out
	}
	for k, v := range doc {
		switch k {
		case "name", "title", "seed", "durability", "concurrency", "ladder", "targets", "workloads":
			continue
		}
		flatten(out, k, v)
	}
	seen := map[string]int{}
	for _, w := range studyWorkloads(text) {
		prefix := w.name
		if seen[w.name]++; seen[w.name] > 1 {
			prefix = fmt.Sprintf("%s#%d", w.name, seen[w.name])
		}
		for k, v := range w.fields {
			switch k {
			case "name":
			case "params":
				flatten(out, prefix, v)
			default:
				flatten(out, prefix+"."+k, v)
			}
		}
	}
	return out
}

// flatten writes v under key, maps as key.sub, lists of maps as key[i].
func flatten(out map[string]string, key string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			flatten(out, key+"."+k, x)
		}
	case []any:
		scalars := true
		for _, x := range v {
			switch x.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		if !scalars {
			for i, x := range v {
				flatten(out, fmt.Sprintf("%s[%d]", key, i), x)
			}
			return
		}
		var parts []string
		for _, x := range v {
			parts = append(parts, fmt.Sprint(x))
		}
		out[key] = "[" + strings.Join(parts, ", ") + "]"
	case nil:
		out[key] = "(unset)"
	default:
		out[key] = fmt.Sprint(v)
	}
}

// Differences lists every setting in which the runs are not all the
// same: study and workloads (when forced), storebench version, status,
// durability, ladder, concurrency, seed, the workloads' parameters and
// the study's other settings, the machine (host and the storage of the
// data directory), and the version and settings of each target present
// in every run.
func Differences(runs []Run) []Difference {
	if len(runs) < 2 {
		return nil
	}
	d := &differ{runs: runs}
	d.runSettings()
	d.studyKeys()
	d.machine()
	d.targets()
	return d.diffs
}

// differ gathers the differences between runs, in the order they are
// found.
type differ struct {
	runs  []Run
	diffs []Difference
}

// add adds what, with each run's value f gives, when they are not all
// the same.
func (d *differ) add(what string, f func(Run) string) {
	diff := Difference{What: what}
	same := true
	for i, r := range d.runs {
		diff.Values = append(diff.Values, f(r))
		same = same && diff.Values[i] == diff.Values[0]
	}
	if !same {
		d.diffs = append(d.diffs, diff)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// runSettings are what results.json records of the run itself.
func (d *differ) runSettings() {
	d.add("study", func(r Run) string { return r.Run.Study })
	d.add("workloads", func(r Run) string { return strings.Join(workloads(r), ", ") })
	d.add("storebench version", func(r Run) string { return orNone(r.Run.Storebench) })
	d.add("status", func(r Run) string { return orNone(r.Run.Status) })
	d.add("durability", func(r Run) string { return orNone(r.Run.Durability) })
	d.add("ladder", func(r Run) string {
		var s []string
		for _, n := range r.Run.Ladder {
			s = append(s, report.Count(n))
		}
		return strings.Join(s, ", ")
	})
	d.add("concurrency", func(r Run) string { return fmt.Sprint(r.Run.Concurrency) })
	d.add("seed", func(r Run) string { return fmt.Sprint(r.Run.Seed) })
}

// studyKeys are what the runs' studies set beyond that
// (studySettings), "(not set)" where a study does not.
func (d *differ) studyKeys() {
	settings := make([]map[string]string, len(d.runs))
	keys := map[string]bool{}
	for i, r := range d.runs {
		settings[i] = studySettings(r.Study)
		for k := range settings[i] {
			keys[k] = true
		}
	}
	for _, k := range sortedKeys(keys) {
		diff := Difference{What: k}
		same := true
		for i := range d.runs {
			v, ok := settings[i][k]
			if !ok {
				v = "(not set)"
			}
			diff.Values = append(diff.Values, v)
			same = same && v == diff.Values[0]
		}
		if !same {
			d.diffs = append(d.diffs, diff)
		}
	}
}

// machine is the host and the storage of the data directory.
func (d *differ) machine() {
	d.add("machine: host name", func(r Run) string { return r.Run.Host.Hostname })
	d.add("machine: CPU", func(r Run) string { return r.Run.Host.CPUModel })
	d.add("machine: logical CPUs", func(r Run) string { return fmt.Sprint(r.Run.Host.LogicalCPUs) })
	d.add("machine: physical cores", func(r Run) string { return fmt.Sprint(r.Run.Host.PhysicalCores) })
	d.add("machine: memory", func(r Run) string { return report.Bytes(r.Run.Host.MemTotalBytes) })
	d.add("machine: kernel", func(r Run) string { return r.Run.Host.Kernel })
	d.add("machine: OS", func(r Run) string { return r.Run.Host.OS })
	d.add("machine: Go", func(r Run) string { return r.Run.Host.GoVersion })
	d.add("machine: clock source", func(r Run) string { return r.Run.Host.ClockSource })
	d.add("storage: filesystem", func(r Run) string { return r.Run.Storage.Filesystem })
	d.add("storage: device", func(r Run) string { return r.Run.Storage.Device })
	d.add("storage: rotational", func(r Run) string {
		if r.Run.Storage.Rotational == nil {
			return "(no single disk)"
		}
		return fmt.Sprint(*r.Run.Storage.Rotational)
	})
	d.add("storage: size", func(r Run) string { return report.Bytes(r.Run.Storage.TotalBytes) })
}

// targets are the targets present in every run: their engine's version
// and settings.
func (d *differ) targets() {
	for _, t := range d.runs[0].Run.Targets {
		all := true
		tk := map[string]bool{}
		for _, r := range d.runs {
			o := findTarget(r.Run, t.Name)
			if o == nil {
				all = false
				break
			}
			for k := range o.Settings {
				tk[k] = true
			}
		}
		if !all {
			continue
		}
		d.add(t.Name+": version", func(r Run) string { return findTarget(r.Run, t.Name).Version })
		for _, k := range sortedKeys(tk) {
			d.add(t.Name+": "+k, func(r Run) string {
				if v, ok := findTarget(r.Run, t.Name).Settings[k]; ok {
					return v
				}
				return "(not set)"
			})
		}
	}
}

func findTarget(r *results.Run, name string) *results.Target {
	for _, t := range r.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RunsMarkdown lists the runs compared and every difference between
// them: what a reader must know before trusting a verdict below it.
func RunsMarkdown(runs []Run, diffs []Difference) string {
	var s strings.Builder
	s.WriteString("# Runs compared\n\n")
	for _, r := range runs {
		fmt.Fprintf(&s, "- %s: %s (study `%s`, started %s, status %s)\n", r.Label, r.Path, r.Run.Study, r.Run.Started.Format("2006-01-02 15:04:05 MST"), r.Run.Status)
	}
	s.WriteString("\n")
	if len(diffs) == 0 {
		s.WriteString("The runs are alike in study, workloads and their parameters, durability, ladder, concurrency, seed, machine, storebench version and the targets' versions and settings.\n\n")
		return s.String()
	}
	s.WriteString("**The runs differ** in what follows: a verdict below may reflect these differences, not only the targets.\n\n| setting |")
	for _, r := range runs {
		fmt.Fprintf(&s, " %s |", r.Label)
	}
	s.WriteString("\n|---|")
	s.WriteString(strings.Repeat("---|", len(runs)))
	s.WriteString("\n")
	cell := strings.NewReplacer("|", `\|`, "\n", " ")
	for _, d := range diffs {
		fmt.Fprintf(&s, "| %s |", cell.Replace(d.What))
		for _, v := range d.Values {
			fmt.Fprintf(&s, " %s |", cell.Replace(v))
		}
		s.WriteString("\n")
	}
	s.WriteString("\n")
	return s.String()
}
