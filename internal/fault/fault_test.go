package fault_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/fault"
	"storebench/internal/study"
)

func decode(t *testing.T, faults string) ([]fault.Action, error) {
	t.Helper()
	src := "name: t\nladder: [10]\ntargets: [redis]\nworkloads:\n  - name: ycsb\n    faults: " + faults + "\n"
	s, err := study.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return fault.Decode(s, s.Workloads[0])
}

// A crash needs no node (the target's one server: node 1) and no restart
// of its own; it may name node 1 too.
func TestDecodeCrashActions(t *testing.T) {
	for _, kind := range []string{fault.Kill9, fault.PowerLoss} {
		for _, entry := range []string{"{at: 2s, action: " + kind + "}", "{at: 2s, action: " + kind + ", node: 1, phase: load}"} {
			got, err := decode(t, "["+entry+"]")
			if err != nil {
				t.Fatalf("%s: %v", entry, err)
			}
			a := got[0]
			if len(got) != 1 || a.Action != kind || a.Node != 1 || a.Phase != "load" || a.Offset() != 2*time.Second || !a.Crash() || a.Down() {
				t.Errorf("%s: %+v", entry, got)
			}
			if s := a.String(); s != kind+" at 2s" {
				t.Errorf("%s: String %q", entry, s)
			}
			if crash, pl := fault.Crashes(got); !crash || pl != (kind == fault.PowerLoss) {
				t.Errorf("%s: Crashes %v %v", entry, crash, pl)
			}
			// The check after it waits until the crash is under way.
			if s := fault.Settled(got); s != 2*time.Second+fault.CrashUnderWay {
				t.Errorf("%s: settled at %s", entry, s)
			}
		}
	}
	if crash, pl := fault.Crashes([]fault.Action{{Action: fault.Kill}, {Action: fault.Restart}}); crash || pl {
		t.Errorf("a kill and a restart counted as crashes: %v %v", crash, pl)
	}
}

func TestDecodeRefusals(t *testing.T) {
	for _, c := range []struct{ faults, field, want string }{
		{"[{at: 1s, action: kill-9, for: 3s}]", ".for", "kill-9 restarts the server at once"},
		{"[{at: 1s, action: power-loss, for: 3s}]", ".for", "power-loss restarts the server at once"},
		{"[{at: 1s, action: kill9}]", ".action", `"kill9": want stop, kill, pause, restart (a cluster's nodes), kill-9 or power-loss (a single server)`},
		{"[{at: 1s, node: 1}]", ".action", "missing: want stop, kill, pause, restart (a cluster's nodes), kill-9 or power-loss"},
		{"[{at: 1s, action: kill}]", ".node", "want the node's index, from 1"},
	} {
		_, err := decode(t, c.faults)
		var se *study.Error
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.faults, err, c.want)
			continue
		}
		if e, ok := err.(*study.Error); ok {
			se = e
		}
		if se == nil || !strings.HasSuffix(se.Field, c.field) || se.Line != 6 {
			t.Errorf("%s: %#v: want field ...%s on line 6", c.faults, err, c.field)
		}
	}
}

// A crash with `until` strikes at an instant drawn from [at, until) by the
// study's seed: the same seed, the same instant; other seeds, others; the
// check after it waits for the drawn instant.
func TestDecodeRandomCrashInstant(t *testing.T) {
	draw := func(seed int) fault.Action {
		t.Helper()
		src := "name: t\nseed: " + strconv.Itoa(seed) + "\nladder: [10]\ntargets: [redis]\nworkloads:\n  - name: ycsb\n    faults: [{at: 1s, until: 5s, action: power-loss}]\n"
		s, err := study.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := fault.Decode(s, s.Workloads[0])
		if err != nil || len(got) != 1 {
			t.Fatalf("seed %d: %v %+v", seed, err, got)
		}
		return got[0]
	}
	seen := map[time.Duration]bool{}
	for seed := 1; seed <= 8; seed++ {
		a := draw(seed)
		if a.Offset() < time.Second || a.Offset() >= 5*time.Second || time.Duration(a.From) != time.Second {
			t.Errorf("seed %d: at %s from %s, want in [1s, 5s) drawn from 1s", seed, a.Offset(), time.Duration(a.From))
		}
		if b := draw(seed); b.Offset() != a.Offset() {
			t.Errorf("seed %d drew %s, then %s", seed, a.Offset(), b.Offset())
		}
		if !strings.Contains(a.String(), "drawn from 1s..5s by the study's seed") || !strings.HasPrefix(a.String(), "power-loss at ") {
			t.Errorf("String %q", a.String())
		}
		if s := fault.Settled([]fault.Action{a}); s != a.Offset()+fault.CrashUnderWay {
			t.Errorf("seed %d: settled at %s, crash at %s", seed, s, a.Offset())
		}
		seen[a.Offset()] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 seeds drew %d distinct instants: %v", len(seen), seen)
	}
}

func TestDecodeRandomCrashRefusals(t *testing.T) {
	for _, c := range []struct{ faults, want string }{
		{"[{at: 1s, until: 5s, action: kill, node: 2}, {at: 9s, action: restart, node: 2}]", "only a crash (kill-9, power-loss) strikes at a random instant"},
		{"[{at: 5s, until: 5s, action: kill-9}]", "5s is not after at (5s)"},
		{"[{at: 5s, until: 2s, action: kill-9}]", "2s is not after at (5s)"},
	} {
		_, err := decode(t, c.faults)
		var se *study.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &se) || !strings.HasSuffix(se.Field, ".until") {
			t.Errorf("%s: %v, want %q on .until", c.faults, err, c.want)
		}
	}
}
