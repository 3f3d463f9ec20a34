package export

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"storebench/internal/event"
	"storebench/internal/results"
)

// shapedRun is a run of rocksdb on two machine shapes, one of them named,
// and pebble on this machine as it is, as the coordinator plans it.
func shapedRun() *results.Run {
	return &results.Run{Study: "ycsb", Targets: []*results.Target{
		{Name: "rocksdb@cpus=0.5,memory=256MiB", Title: "RocksDB on cpus=0.5,memory=256MiB", Machine: "cpus=0.5,memory=256MiB"},
		{Name: "rocksdb@small", Title: "RocksDB on small", Machine: "name=small,cpus=1,memory=1GiB"},
		{Name: "pebble", Title: "Pebble"},
	}}
}

// exportShaped feeds an export of format f the events of shapedRun: one
// step of two ticks on each target.
func exportShaped(t *testing.T, f string) string {
	t.Helper()
	dir := t.TempDir()
	e, err := New(Spec{Format: f, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	run := shapedRun()
	evs := []event.Event{event.RunPlanned{Run: run, Dir: "/x/ycsb-20261128-150226"}}
	for _, tr := range run.Targets {
		res := &results.Step{Workload: "ycsb", Phase: "a", N: 2000, Started: time.Unix(1, 0), Seconds: 2, Ops: 2000,
			Series: []results.Tick{{T: 1, Ops: 1000, OpsPerS: 1000}, {T: 2, Ops: 1000, OpsPerS: 1000}}}
		evs = append(evs, event.StepFinished{Study: "ycsb", Target: tr.Name, Result: res, Run: run, Outcome: event.StepOK,
			Step: event.Step{Workload: "ycsb", Phase: "a", N: 2000, Labels: results.StepLabels("ycsb", "a", 2000)}})
	}
	for _, ev := range evs {
		if err := e.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wantMachine is the target, engine and machine each row of shapedRun's
// targets must carry.
var wantMachine = map[string][2]string{
	"rocksdb@cpus=0.5,memory=256MiB": {"rocksdb", "cpus=0.5,memory=256MiB"},
	"rocksdb@small":                  {"rocksdb", "name=small,cpus=1,memory=1GiB"},
	"pebble":                         {"pebble", ""},
}

// checkMachineRows checks that rows (column -> value) carry each
// target's engine and machine, and that every target has want rows.
func checkMachineRows(t *testing.T, file string, rows []map[string]string, want int) {
	t.Helper()
	per := map[string]int{}
	for i, r := range rows {
		for _, col := range []string{"target", "engine", "machine"} {
			if _, ok := r[col]; !ok {
				t.Fatalf("%s row %d has no %s column: %v", file, i+1, col, r)
			}
		}
		w, ok := wantMachine[r["target"]]
		if !ok {
			t.Fatalf("%s row %d: target %q not in the run", file, i+1, r["target"])
		}
		if r["engine"] != w[0] || r["machine"] != w[1] {
			t.Errorf("%s row %d (%s): engine %q machine %q, want %q %q", file, i+1, r["target"], r["engine"], r["machine"], w[0], w[1])
		}
		per[r["target"]]++
	}
	for name := range wantMachine {
		if per[name] != want {
			t.Errorf("%s: %d rows of %s, want %d", file, per[name], name, want)
		}
	}
}

// Issue 35: a machine is a dimension of a step. steps.csv and ticks.csv
// of a run on two shapes carry, beside the target, its engine and its
// machine as results.json writes it (empty without one), read back by
// encoding/csv under the header's names.
func TestExportCSVHasMachineColumn(t *testing.T) {
	dir := exportShaped(t, "csv")
	for file, want := range map[string]int{"steps.csv": 1, "ticks.csv": 2} {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("%s: encoding/csv: %v", file, err)
		}
		if len(recs) < 2 {
			t.Fatalf("%s: %d records", file, len(recs))
		}
		head := recs[0]
		if head[2] != "target" || head[3] != "engine" || head[4] != "machine" {
			t.Errorf("%s: header %v: want target, engine, machine side by side", file, head[:5])
		}
		var rows []map[string]string
		for _, rec := range recs[1:] {
			r := map[string]string{}
			for i, col := range head {
				r[col] = rec[i]
			}
			rows = append(rows, r)
		}
		checkMachineRows(t, file, rows, want)
	}
}

// The JSONL export carries the same keys.
func TestExportJSONLHasMachineKey(t *testing.T) {
	dir := exportShaped(t, "jsonl")
	for file, want := range map[string]int{"steps.jsonl": 1, "ticks.jsonl": 2} {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var obj map[string]any
			if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
				t.Fatalf("%s: %v: %s", file, err, sc.Text())
			}
			r := map[string]string{}
			for _, k := range []string{"target", "engine", "machine"} {
				if v, ok := obj[k].(string); ok {
					r[k] = v
				}
			}
			rows = append(rows, r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		checkMachineRows(t, file, rows, want)
	}
}
