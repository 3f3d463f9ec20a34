package compare

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// onShape is a target of engine e on machine m (title t) whose one step
// ran at ops per second, five one-second intervals.
func onShape(e, title, m string, ops float64) *results.Target {
	s := step([]float64{ops, ops, ops, ops, ops}, []int64{100, 100, 100, 100, 100})
	name := e
	if m != "" {
		name = e + "@" + title
	}
	t := &results.Target{Name: name, Title: e + " on " + title, Machine: m, Steps: []*results.Step{s}, Settings: map[string]string{}}
	if m != "" {
		// As the coordinator records it: the machine is a setting too.
		t.Settings["machine"] = m
	}
	return t
}

// Issue 35: across runs a target is the same engine on the same machine.
// Run B lists its shapes in the other order; each pair is one shape, its
// figures from that shape in both runs. A named shape whose limits
// changed between the runs is a different machine: not compared, and
// said.
func TestPairsMatchTargetAndMachine(t *testing.T) {
	a := &results.Run{Targets: []*results.Target{
		onShape("rocksdb", "cpus=0.5,memory=256MiB", "cpus=0.5,memory=256MiB", 500),
		onShape("rocksdb", "cpus=1,memory=1GiB", "cpus=1,memory=1GiB", 1000),
		onShape("rocksdb", "small", "name=small,cpus=1,memory=1GiB", 900),
		onShape("pebble", "", "", 700),
	}}
	b := &results.Run{Targets: []*results.Target{
		onShape("rocksdb", "cpus=1,memory=1GiB", "cpus=1,memory=1GiB", 1010),
		onShape("rocksdb", "cpus=0.5,memory=256MiB", "cpus=0.5,memory=256MiB", 505),
		onShape("rocksdb", "small", "name=small,cpus=0.5,memory=1GiB", 450),
		onShape("pebble", "", "", 690),
	}}
	pairs, skipped := Pairs([]*results.Run{a}, []*results.Run{b}, "runA", "runB")
	if len(pairs) != 3 {
		t.Fatalf("%d pairs, want 3 (two unnamed shapes and pebble): %v", len(pairs), pairs)
	}
	want := map[string][2]float64{"cpus=0.5,memory=256MiB": {500, 505}, "cpus=1,memory=1GiB": {1000, 1010}, "": {700, 690}}
	for _, p := range pairs {
		ta, tb := p[0].Target, p[1].Target
		if ta.Machine != tb.Machine || engine(ta) != engine(tb) {
			t.Errorf("%s (%s) paired with %s (%s)", ta.Name, ta.Machine, tb.Name, tb.Machine)
		}
		rows := Compare(p[0], p[1])
		if w := want[ta.Machine]; len(rows) == 0 || rows[0].A != w[0] || rows[0].B != w[1] {
			t.Errorf("%s: throughput row %+v, want A %v B %v", ta.Name, rows, w[0], w[1])
		}
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "rocksdb@small is not compared") ||
		!strings.Contains(skipped[0], "name=small,cpus=1,memory=1GiB") || !strings.Contains(skipped[0], "name=small,cpus=0.5,memory=1GiB") {
		t.Errorf("skipped %q: want rocksdb@small named with both machines", skipped)
	}
	diffs := Differences([]Run{{Label: "A", Run: a}, {Label: "B", Run: b}})
	found := false
	for _, d := range diffs {
		if d.What == "rocksdb@small: machine" {
			found = d.Values[0] == "name=small,cpus=1,memory=1GiB" && d.Values[1] == "name=small,cpus=0.5,memory=1GiB"
		}
		if strings.HasSuffix(d.What, ": machine") && d.What != "rocksdb@small: machine" {
			t.Errorf("difference %s %v: its machine is the same in both runs", d.What, d.Values)
		}
	}
	if !found {
		t.Errorf("differences %+v: want rocksdb@small's machine", diffs)
	}
}

// The comparison says each side's machine: both sides' when it is one,
// each side's when two shapes of one run are compared.
func TestMarkdownSaysTheMachine(t *testing.T) {
	half := onShape("rocksdb", "cpus=0.5,memory=256MiB", "cpus=0.5,memory=256MiB", 500)
	one := onShape("rocksdb", "cpus=1,memory=1GiB", "cpus=1,memory=1GiB", 1000)
	plain := onShape("pebble", "", "", 700)
	for _, c := range []struct {
		a, b *results.Target
		want string
	}{
		{half, half, "Machine: cpus=0.5,memory=256MiB (both sides)\n"},
		{half, one, "Machine: A cpus=0.5,memory=256MiB; B cpus=1,memory=1GiB\n"},
		{plain, one, "Machine: A this machine as it is; B cpus=1,memory=1GiB\n"},
	} {
		a, b := Side{Label: c.a.Title, Target: c.a}, Side{Label: c.b.Title, Target: c.b}
		if md := Markdown(a, b, Compare(a, b)); !strings.Contains(md, c.want) {
			t.Errorf("%s against %s: no %q in\n%s", c.a.Name, c.b.Name, c.want, md)
		}
	}
	a, b := Side{Label: "p", Target: plain}, Side{Label: "p", Target: plain}
	if md := Markdown(a, b, Compare(a, b)); strings.Contains(md, "Machine:") {
		t.Errorf("targets on no shape: a machine line\n%s", md)
	}
}

// --targets A,B of one run: names on machine shapes have commas of their
// own; the split is the one that names two of the run's targets.
func TestSplitTargetsWithMachines(t *testing.T) {
	r := &results.Run{Targets: []*results.Target{
		onShape("rocksdb", "cpus=0.5,memory=256MiB", "cpus=0.5,memory=256MiB", 1),
		onShape("rocksdb", "cpus=1,memory=1GiB", "cpus=1,memory=1GiB", 1),
		onShape("pebble", "", "", 1),
	}}
	for arg, want := range map[string][2]string{
		"rocksdb@cpus=0.5,memory=256MiB,rocksdb@cpus=1,memory=1GiB": {"rocksdb@cpus=0.5,memory=256MiB", "rocksdb@cpus=1,memory=1GiB"},
		"pebble,rocksdb@cpus=1,memory=1GiB":                         {"pebble", "rocksdb@cpus=1,memory=1GiB"},
		"pebble,redis":                                              {"pebble", "redis"},
	} {
		a, b, err := SplitTargets(arg, r)
		if err != nil || a != want[0] || b != want[1] {
			t.Errorf("%s: %q %q %v, want %q %q", arg, a, b, err, want[0], want[1])
		}
	}
	if _, _, err := SplitTargets("pebble,redis,tikv", r); err == nil || !strings.Contains(err.Error(), "its targets: rocksdb@cpus=0.5,memory=256MiB, rocksdb@cpus=1,memory=1GiB, pebble") {
		t.Errorf("three names: %v", err)
	}
}
