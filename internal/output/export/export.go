// Package export is the output that writes a run's figures as flat files
// a spreadsheet or pandas opens (storebench run --export csv=DIR,
// --export jsonl=DIR): steps.csv (or .jsonl) with one row per finished
// step, and ticks.csv (.jsonl) with one row per measurement tick (about
// a second) of every step. Rows are written as each step ends, so the
// files of a long study are read while it runs. Every row names its run
// (the results directory's name), study, target, engine, machine,
// workload, phase, n and the step's other labels; times are in
// nanoseconds, as in results.json. A target run on a machine shape
// (--machine, a study's machines:) is named "ENGINE@SHAPE" in target; its
// engine alone is in engine and the shape in machine, as results.json's
// target writes it ("cpus=0.5,memory=256MiB", a named shape
// "name=NAME,..."), empty for this machine as it is: a spreadsheet filters
// or pivots on either without parsing the name.
// A run whose study had a sizing also gets costs.csv (.jsonl): its
// projection, one row per target, written when the run ends.
package export

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"storebench/internal/event"
	"storebench/internal/output"
	"storebench/internal/results"
	"storebench/internal/safefile"
)

func init() {
	output.Register(output.Def{Flag: "export", Repeat: true, Usage: usage,
		Help:  "also write the figures as flat files: csv=DIR or jsonl=DIR (repeatable): DIR/steps.csv, one row per step, and DIR/ticks.csv, one row per second of each step",
		Check: func(v string) error { _, err := ParseSpec(v); return err },
		Open: func(v string) (event.Output, string, error) {
			sp, err := ParseSpec(v)
			if err != nil {
				return nil, "", err
			}
			e, err := New(sp)
			return e, "", err
		}})
}

// usage is the paragraph of `storebench run --help`.
const usage = `Flat files (--export csv=DIR, --export jsonl=DIR, repeatable): DIR/steps.csv
has one row per step and DIR/ticks.csv one row per second of each step,
the figures of results.json, written as each step ends (jsonl: one JSON
object a line, same keys). Files of those names in DIR are replaced.
`

// Formats are the kinds of file --export writes.
var Formats = []string{"csv", "jsonl"}

// StepColumns and TickColumns are the columns of steps.* and ticks.*, in
// order (a JSONL object's keys).
var (
	StepColumns = []string{"run", "study", "target", "engine", "machine", "workload", "phase", "n", "labels", "outcome", "started",
		"seconds", "ops", "ops_per_s", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns",
		"verified", "verify_failed", "rss_bytes", "cpu_percent", "error"}
	// CostColumns are costs.*: one row per target of a run whose study
	// had a sizing (its projection: docs/cost.md). A plan is the
	// engine's, fitted over every shape it ran on: target is the engine
	// and machine the catalog's machine type it projects, not a shape.
	CostColumns = []string{"run", "study", "target", "catalog", "currency", "load_ops_per_s", "items", "replicas",
		"machine", "count", "shards", "monthly", "cost_per_million_ops", "ops_per_currency_unit", "deciding",
		"held_out_error", "next_machine_month", "reason"}
	TickColumns = []string{"run", "study", "target", "engine", "machine", "workload", "phase", "n", "labels", "t_s",
		"ops", "ops_per_s", "p50_ns", "p99_ns", "max_ns", "intended_p99_ns", "late", "rss_bytes", "cpu_percent"}
)

// Spec is one --export: a format and the directory its files go to.
type Spec struct{ Format, Dir string }

// ParseSpec reads FORMAT=DIR.
func ParseSpec(v string) (Spec, error) {
	f, dir, ok := strings.Cut(v, "=")
	if !ok || dir == "" {
		return Spec{}, fmt.Errorf("%q: give FORMAT=DIR, FORMAT one of %s", v, strings.Join(Formats, ", "))
	}
	if f != "csv" && f != "jsonl" {
		return Spec{}, fmt.Errorf("%q: %q is not one of %s", v, f, strings.Join(Formats, ", "))
	}
	return Spec{Format: f, Dir: dir}, nil
}

// Export writes one format's files.
type Export struct {
	spec         Spec
	run          string
	steps, ticks *table
	// machines are the run's targets' engines and shapes, by target
	// name, from its plan.
	machines map[string]targetMachine
	// err is the first write that failed: Close returns it.
	err error
}

// New creates spec's directory and its two files (replacing files of
// those names), so that a directory that cannot be written is said
// before the run starts.
func New(spec Spec) (*Export, error) {
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, err
	}
	e := &Export{spec: spec}
	var err error
	if e.steps, err = newTable(filepath.Join(spec.Dir, "steps."+spec.Format), spec.Format, StepColumns); err != nil {
		return nil, err
	}
	if e.ticks, err = newTable(filepath.Join(spec.Dir, "ticks."+spec.Format), spec.Format, TickColumns); err != nil {
		e.steps.close()
		return nil, err
	}
	return e, nil
}

// Handle writes a finished step's rows. A write that fails stops the
// export (the run goes on); Close returns its error.
func (e *Export) Handle(ev event.Event) error {
	if e.err != nil {
		return e.err
	}
	e.err = e.handle(ev)
	return e.err
}

func (e *Export) handle(ev event.Event) error {
	switch ev := ev.(type) {
	case event.RunPlanned:
		e.run = filepath.Base(ev.Dir)
		e.plan(ev.Run)
	case event.RunFinished:
		return e.costs(ev.Run)
	case event.RunInterrupted:
		return e.costs(ev.Run)
	case event.StepFinished:
		if ev.Result == nil {
			return nil
		}
		tm := e.machineOf(ev.Target, ev.Run)
		id := []any{e.run, ev.Study, ev.Target, tm.engine, tm.machine, ev.Step.Workload, ev.Step.Phase, ev.Step.N, ev.Step.Labels.Extra()}
		if err := e.steps.row(append(id, stepRow(ev)...)); err != nil {
			return err
		}
		for _, t := range ev.Result.Series {
			if err := e.ticks.row(append(id[:len(id):len(id)], t.T, t.Ops, t.OpsPerS, t.P50, t.P99, t.Max, t.IntendedP99, t.Late, t.RSSBytes, t.CPU)); err != nil {
				return err
			}
		}
		if err := e.steps.flush(); err != nil {
			return err
		}
		return e.ticks.flush()
	}
	return nil
}

// targetMachine is a target's engine (its name without "@SHAPE") and
// the machine shape it ran on ("" none).
type targetMachine struct{ engine, machine string }

// plan records the engine and machine of every target the run planned.
func (e *Export) plan(run *results.Run) {
	if run == nil {
		return
	}
	e.machines = make(map[string]targetMachine, len(run.Targets))
	for _, t := range run.Targets {
		e.machines[t.Name] = splitTarget(t)
	}
}

// machineOf is the target named name's engine and machine: from the
// plan, else from run (a target the plan did not name), else its name.
func (e *Export) machineOf(name string, run *results.Run) targetMachine {
	if tm, ok := e.machines[name]; ok {
		return tm
	}
	if run != nil {
		for _, t := range run.Targets {
			if t.Name == name {
				return splitTarget(t)
			}
		}
	}
	return targetMachine{engine: name}
}

// splitTarget is a target's engine and machine. A target on a shape is
// named ENGINE@TITLE (the shape's name or limits, which hold no "@").
func splitTarget(t *results.Target) targetMachine {
	tm := targetMachine{engine: t.Name, machine: t.Machine}
	if i := strings.LastIndexByte(t.Name, '@'); i > 0 && t.Machine != "" {
		tm.engine = t.Name[:i]
	}
	return tm
}

func stepRow(ev event.StepFinished) []any {
	r := ev.Result
	res := &r.Resources
	if r.ServerResources != nil {
		res = r.ServerResources
	}
	l := r.Latency
	return []any{ev.Outcome, r.Started.UTC().Format(time.RFC3339Nano), r.Seconds, r.Ops, float64(r.Ops) / max(r.Seconds, 1e-9),
		l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max, r.Verify.Checked, r.Verify.Failed, res.After.RSSBytes, res.CPUPercent, ev.Why}
}

// costs writes costs.* from the run's projection (none: no file).
func (e *Export) costs(run *results.Run) error {
	p := run.Projection
	if p == nil {
		return nil
	}
	tab, err := newTable(filepath.Join(e.spec.Dir, "costs."+e.spec.Format), e.spec.Format, CostColumns)
	if err != nil {
		return err
	}
	for _, pl := range p.Plans {
		row := []any{e.run, run.Study, pl.Target, p.Catalog, p.Currency, p.Sizing.Load, pl.Items, p.Sizing.Replicas}
		if o := pl.Best; o != nil {
			row = append(row, o.Machine.Name, o.Count, o.Shards, o.Monthly, pl.PerMillion, pl.OpsPerUnit, o.Deciding, pl.HeldOutError, pl.NextMonth, "")
		} else {
			row = append(row, "", 0, 0, 0.0, 0.0, 0.0, "", pl.HeldOutError, 0, pl.Reason)
		}
		if err := tab.row(row); err != nil {
			tab.close()
			return err
		}
	}
	return tab.close()
}

// Close flushes and closes the files.
func (e *Export) Close() error {
	err1, err2 := e.steps.close(), e.ticks.close()
	for _, err := range []error{e.err, err1, err2} {
		if err != nil {
			return fmt.Errorf("--export %s=%s: %w", e.spec.Format, e.spec.Dir, err)
		}
	}
	return nil
}

// table is one file: CSV with a header row, or JSONL.
type table struct {
	f    *os.File
	w    *bufio.Writer
	csv  *csv.Writer
	cols []string
}

func newTable(path, format string, cols []string) (*table, error) {
	// Not through a symbolic link planted in a shared export directory,
	// nor into a FIFO or device: only a regular file is replaced.
	f, err := safefile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	t := &table{f: f, w: bufio.NewWriter(f), cols: cols}
	if format == "csv" {
		t.csv = csv.NewWriter(t.w)
		if err := t.csv.Write(cols); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *table) row(vals []any) error {
	if t.csv != nil {
		rec := make([]string, len(vals))
		for i, v := range vals {
			rec[i] = cell(v)
		}
		return t.csv.Write(rec)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(t.cols[i])
		x, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(x)
	}
	b.WriteString("}\n")
	_, err := t.w.WriteString(b.String())
	return err
}

func cell(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func (t *table) flush() error {
	if t.csv != nil {
		t.csv.Flush()
		if err := t.csv.Error(); err != nil {
			return err
		}
	}
	return t.w.Flush()
}

func (t *table) close() error {
	err := t.flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}
