// Package fault is the fault actions a study can ask for during a phase:
// on a cluster target's nodes, stop (clean shutdown), kill (SIGKILL: a
// crash), pause (SIGSTOP, then SIGCONT after a while: a node that hangs)
// and restart; on a single server storebench starts itself, the crashes
// kill-9 (SIGKILL, then a restart on the same data) and power-loss
// (SIGKILL, the writes its power-loss mount held unsynced dropped, then the
// restart). The coordinator carries them out at their offsets while the
// worker runs the phase, and records each as an event with its time.
package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"storebench/internal/kv"
	"storebench/internal/study"
)

// Actions a fault can take.
const (
	Stop    = "stop"
	Kill    = "kill"
	Pause   = "pause"
	Restart = "restart"
)

// Crash kinds, taken on the process that holds the engine open (by the
// durability workload, package workload/durability, or as a study's
// fault action on a managed server): PowerLoss is SIGKILL, then the
// data's power-loss mount drops what was not fsynced and is mounted again (a
// power failure); Kill9 is SIGKILL alone (the page cache kept). As fault
// actions, each is followed at once by the restart on the same data.
const (
	PowerLoss = "power-loss"
	Kill9     = "kill-9"
)

// Crasher is the optional ability of what holds an engine's data (a
// managed server, an embedded engine's own process) to take a crash,
// found by type assertion: Crash kills its processes with SIGKILL and
// returns once they are gone; under PowerLoss the writes its power-loss
// mount held unsynced are dropped too and the mount comes back (a
// reboot). Restart starts it again on the same data (its recovery).
type Crasher interface {
	Crash(ctx context.Context, kind string) error
	Restart(ctx context.Context) error
}

// DefaultPause is how long a pause lasts when `for` is not given.
const DefaultPause = 10 * time.Second

// CrashUnderWay bounds how long after its offset a crash action has
// killed the server: a check that reads after it (Settled) reads what the
// server recovered, never what it held before the crash (a read while it
// is down fails and is retried).
const CrashUnderWay = time.Second

// valid lists the actions, for errors.
const valid = "stop, kill, pause, restart (a cluster's nodes), kill-9 or power-loss (a single server)"

// Action is one entry of a workload's `faults:` list, e.g.
//
//	faults:
//	  - {at: 10s, action: kill, node: 2, phase: load}
//	  - {at: 25s, action: restart, node: 2}
//
// At is the offset from the start of the phase; Node counts from 1 (a
// crash's may be omitted: the target's one server); Phase defaults to the
// previous entry's, the first to "load"; For is a pause's length. Target,
// if set, is the one study target the action applies to (defaulting to
// the previous entry's), so a study can set a single-node target beside
// the cluster it fails; unset, it applies to every target (each must then
// be a cluster storebench starts, or, for a crash, a single server it
// starts). A crash needs no restart of its own:
//
//	faults:
//	  - {at: 5s, action: power-loss, phase: load}
//
// A crash may strike at a random instant instead: with Until, its offset
// is drawn uniformly from [At, Until), from the study's seed and the
// action's place in the list, so a run with the same seed crashes at the
// same instant and another seed elsewhere:
//
//	faults:
//	  - {at: 1s, until: 10s, action: kill-9}
type Action struct {
	At    study.Duration `yaml:"at" json:"at" range:"0s..24h"`
	Until study.Duration `yaml:"until" json:"until,omitempty" range:"0s..24h"`
	// From is At as the study gave it, when Until drew At (0 otherwise).
	From   study.Duration `yaml:"-" json:"from,omitempty"`
	Action string         `yaml:"action" json:"action"`
	Node   int            `yaml:"node" json:"node" range:"0..1000"`
	Phase  string         `yaml:"phase" json:"phase"`
	For    study.Duration `yaml:"for" json:"for,omitempty" range:"0s..24h"`
	Target string         `yaml:"target" json:"target,omitempty"`
}

// Offset is At as a time.Duration.
func (a Action) Offset() time.Duration { return time.Duration(a.At) }

// PauseFor is how long a pause lasts.
func (a Action) PauseFor() time.Duration {
	if a.For > 0 {
		return time.Duration(a.For)
	}
	return DefaultPause
}

func (a Action) String() string {
	if a.Crash() {
		if a.Until > 0 {
			return fmt.Sprintf("%s at %s (drawn from %s..%s by the study's seed)", a.Action, a.Offset().Round(time.Millisecond), time.Duration(a.From), time.Duration(a.Until))
		}
		return fmt.Sprintf("%s at %s", a.Action, a.Offset())
	}
	s := fmt.Sprintf("%s node %d at %s", a.Action, a.Node, a.Offset())
	if a.Action == Pause {
		s += fmt.Sprintf(" for %s", a.PauseFor())
	}
	return s
}

// Down says whether the action leaves the node down until a restart.
func (a Action) Down() bool { return a.Action == Stop || a.Action == Kill }

// Crash says whether the action is a crash of a single server (Kill9,
// PowerLoss), which restarts it on its data.
func (a Action) Crash() bool { return a.Action == Kill9 || a.Action == PowerLoss }

// Crashes says whether any of actions is a crash, and whether one is a
// power loss.
func Crashes(actions []Action) (crash, powerLoss bool) {
	for _, a := range actions {
		crash = crash || a.Crash()
		powerLoss = powerLoss || a.Action == PowerLoss
	}
	return crash, powerLoss
}

// Decode reads and checks entry e's faults (none: nil). Errors name the
// file, the line and the field. A node that a phase stops or kills must
// be restarted later in that phase: the check of acknowledged writes
// reads from every replica once the node is back.
func Decode(s *study.Study, e study.Entry) ([]Action, error) {
	n := e.Faults
	if n.Kind == 0 {
		return nil, nil
	}
	path := "workloads." + e.Name + ".faults"
	if n.Kind != yaml.SequenceNode {
		return nil, &study.Error{File: s.File, Line: n.Line, Field: path, Msg: "want a list of fault actions, e.g. [{at: 10s, action: kill, node: 2, phase: load}]"}
	}
	var out []Action
	phase, tgt := "load", ""
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		var a Action
		if err := study.DecodeParams(s.File, *item, p, &a); err != nil {
			return nil, err
		}
		bad := func(field, format string, args ...any) error {
			return &study.Error{File: s.File, Line: study.FieldLine(*item, field), Field: p + "." + field, Msg: fmt.Sprintf(format, args...)}
		}
		switch a.Action {
		case Stop, Kill, Pause, Restart:
		case Kill9, PowerLoss:
			if a.Node == 0 {
				a.Node = 1
			}
		case "":
			return nil, bad("action", "missing: want "+valid)
		default:
			return nil, bad("action", "%q: want %s", a.Action, valid)
		}
		if a.Node < 1 {
			return nil, bad("node", "want the node's index, from 1")
		}
		if a.For != 0 && a.Crash() {
			return nil, bad("for", "%s restarts the server at once: it lasts no while", a.Action)
		}
		if a.For != 0 && a.Action != Pause {
			return nil, bad("for", "only a pause lasts for a while")
		}
		if a.Until != 0 {
			if !a.Crash() {
				return nil, bad("until", "only a crash (kill-9, power-loss) strikes at a random instant: a node's stop or kill is followed by its own restart")
			}
			if a.Until <= a.At {
				return nil, bad("until", "%s is not after at (%s): the crash is drawn from [at, until)", time.Duration(a.Until), time.Duration(a.At))
			}
			r := rand.New(rand.NewPCG(uint64(s.Seed), uint64(i)))
			a.From = a.At
			a.At = a.From + study.Duration(r.Int64N(int64(a.Until-a.From)))
		}
		if a.Phase == "" {
			a.Phase = phase
		}
		phase = a.Phase
		if a.Target == "" {
			a.Target = tgt
		}
		tgt = a.Target
		if a.Target != "" && !hasTarget(s, a.Target) {
			return nil, bad("target", "%q is not a target of the study", a.Target)
		}
		out = append(out, a)
	}
	if err := checkRestarts(s, n.Content, path, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkRestarts requires each node stopped or killed in a phase to come
// back later in it (a restart of the same target and node at or after
// it), since acknowledged writes are checked on every replica once the
// node is back; out holds the decoded items, path is their field.
func checkRestarts(s *study.Study, items []*yaml.Node, path string, out []Action) error {
	for i, a := range out {
		if !a.Down() {
			continue
		}
		back := false
		for _, b := range out[i+1:] {
			if b.Phase == a.Phase && b.Target == a.Target && b.Node == a.Node && b.Action == Restart && b.At >= a.At {
				back = true
				break
			}
		}
		if !back {
			return &study.Error{File: s.File, Line: study.FieldLine(*items[i], "action"), Field: fmt.Sprintf("%s[%d].action", path, i),
				Msg: fmt.Sprintf("node %d is %sed in phase %s and never restarted: add {at: ..., action: restart, node: %d} after it (acknowledged writes are checked on every replica once the node is back)", a.Node, a.Action, a.Phase, a.Node)}
		}
	}
	return nil
}

func hasTarget(s *study.Study, name string) bool {
	for _, t := range s.Targets {
		if t.Name == name {
			return true
		}
	}
	return false
}

// On returns the actions that apply to target name: those naming it and
// those naming no target.
func On(actions []Action, name string) []Action {
	var out []Action
	for _, a := range actions {
		if a.Target == "" || a.Target == name {
			out = append(out, a)
		}
	}
	return out
}

// Of returns the actions of one phase.
func Of(actions []Action, phase string) []Action {
	var out []Action
	for _, a := range actions {
		if a.Phase == phase {
			out = append(out, a)
		}
	}
	return out
}

// CrashLosses says how the acknowledged writes that actions' crashes
// lose count on a server that ran under durability class: measured
// (async: the server acknowledges a write before it is fsynced, and a
// crash may take it) or the step's failure (sync: each write is fsynced
// before its acknowledgement, so none may be lost). why says which, and
// why, for the report. No crash among actions: false and "".
func CrashLosses(actions []Action, class kv.Durability) (measured bool, why string) {
	var kinds []string
	for _, a := range actions {
		if a.Crash() && !slices.Contains(kinds, a.Action) {
			kinds = append(kinds, a.Action)
		}
	}
	if len(kinds) == 0 {
		return false, ""
	}
	crash := strings.Join(kinds, " and ")
	if class == kv.Sync {
		return false, fmt.Sprintf("a failure: the server ran under sync durability (each write fsynced before its acknowledgement), so a %s may lose none", crash)
	}
	return true, fmt.Sprintf("measured, not a failure: the server ran under %s durability (a write acknowledged before it is fsynced), which a %s may lose", class, crash)
}

// Settled is when the phase's last action is over (a pause's end
// included, and a crash's CrashUnderWay), from the phase's start.
func Settled(actions []Action) time.Duration {
	var end time.Duration
	for _, a := range actions {
		t := a.Offset()
		if a.Action == Pause {
			t += a.PauseFor()
		}
		if a.Crash() {
			t += CrashUnderWay
		}
		end = max(end, t)
	}
	return end
}
