package all

import (
	"reflect"
	"strings"
	"testing"

	"storebench/internal/fault"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
)

// Every numeric parameter of every workload, of a sweep and of a fault
// declares its range (`range:"lo..hi"`, ends that parse as the
// parameter), so that the decoder refuses a value outside it before
// anything runs and `storebench list` can show it.
func TestEveryNumericParameterHasARange(t *testing.T) {
	p := workload.Planning{File: "t.yaml", Ladder: []int64{10}, Seed: 1, Concurrency: 1}
	for _, w := range workload.All() {
		if _, err := w.DecodeParams(p, study.Entry{Name: w.Name()}); err != nil {
			t.Fatalf("%s: defaults: %v", w.Name(), err)
		}
	}
	types := study.Declared()
	types["sweep"] = reflect.TypeOf(sweep.Spec{})
	types["faults[]"] = reflect.TypeOf(fault.Action{})
	for _, w := range workload.All() {
		if _, ok := types["workloads."+w.Name()+".params"]; !ok {
			t.Errorf("%s decodes its params without study.DecodeParams", w.Name())
		}
	}
	numeric := 0
	for path, typ := range types {
		for _, p := range study.Params(typ) {
			if p.Numeric {
				numeric++
			}
		}
		if bad := study.Unranged(typ); len(bad) > 0 {
			t.Errorf("%s: numeric parameters without a valid range: %s", path, strings.Join(bad, ", "))
		}
	}
	if numeric < 80 {
		t.Errorf("%d numeric parameters found: the walk misses some", numeric)
	}
}

// A value outside its parameter's range is refused when the study is
// decoded, naming the field, the value and the range: a rate of 1e300
// (it used to run, printing a 300-digit rate), a search of 0 trials (it
// ran forever), NaN and infinity, a negative count in a list.
func TestParametersOutOfRangeAreRefused(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{"workloads:\n  - name: ledger\n    params: {stress: {rate: 1e300}}\n", "t.yaml:6: workloads.ledger.params.stress.rate: 1e300 is out of range: want 0..1e8"},
		{"workloads:\n  - name: ledger\n    params: {stress: {rate: .nan}}\n", "workloads.ledger.params.stress.rate: .nan is out of range: want 0..1e8"},
		{"workloads:\n  - name: ycsb\n    params: {rate: .inf}\n", "workloads.ycsb.params.rate: .inf is out of range: want 0..1e8"},
		{"workloads:\n  - name: ledger\n    params: {payload: 17MiB}\n", "workloads.ledger.params.payload: 17MiB is out of range: want 0..16MiB"},
		{"workloads:\n  - name: ledger\n    params: {chains: {lengths: [10, 2e9]}}\n", "workloads.ledger.params.chains.lengths[1]: 2e9 is out of range: want 1..1e9"},
		{"workloads:\n  - name: ycsb\n    sweep: {rate: {start: 100, max_trials: 0, duration: 2s}}\n", "t.yaml:6: workloads.ycsb.sweep.rate.max_trials: 0 is out of range: want 1..64"},
		{"workloads:\n  - name: oltp\n    params: {duration: 48h}\n", "workloads.oltp.params.duration: 48h is out of range: want 1ms..24h"},
	} {
		s, err := study.Parse("t.yaml", []byte("name: t\nladder: [10]\ntargets: [pebble]\n"+c.params))
		if err == nil {
			e := s.Workloads[0]
			var w workload.Workload
			if w, err = workload.Lookup(e.Name); err == nil {
				if _, err = w.DecodeParams(sweep.PlanningOf(s), e); err == nil {
					_, err = sweep.Decode(sweep.PlanningOf(s), e)
				}
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %q", c.params, err, c.want)
		}
	}
}
