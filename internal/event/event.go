// Package event is what a run tells its outputs: typed events, emitted by
// the coordinator in the order things happen, and the one interface an
// output implements. The coordinator decides and measures; outputs (the
// console, results.json, the report, the live metrics endpoint, the flat
// exports: packages under internal/output) render. An output never
// changes the run: it reads what an event carries, and the *results.Run
// an event points to belongs to the coordinator (read it, never keep
// writing to it).
package event

import (
	"errors"
	"time"

	"storebench/internal/results"
)

// Event is one of the types below.
type Event interface{ event() }

// Step says which step an event is about: what the planner gave.
type Step struct {
	Workload string
	Phase    string
	N        int64
	Labels   results.Labels
}

// RunPlanned: the results directory exists and Run holds the plan, every
// target pending. Dir is the run's results directory.
type RunPlanned struct {
	Run *results.Run
	Dir string
}

// TargetUnavailable: a target that cannot run here at all (its engine is
// not built in); nothing runs on it.
type TargetUnavailable struct{ Target, Reason string }

// StepNA: the target cannot run this step (it lacks what the step
// requires); it is recorded as n/a.
type StepNA struct {
	Target string
	Step   Step
	Reason string
}

// TargetStarted: the target's n/a steps are recorded in Target; its
// server and worker start next.
type TargetStarted struct {
	Run    *results.Run
	Target *results.Target
}

// ServerStarting, ServerReady and ServerStopped: a server storebench
// runs for a target. Err is a failure to stop it.
type ServerStarting struct{ Target, Title string }

// ServerReady: the server answers at URI (its password masked).
type ServerReady struct {
	Target string
	URI    string
	Took   time.Duration
	PID    int
}

// ServerStopped: the target's server was stopped (Err: how that failed).
type ServerStopped struct {
	Target string
	Err    error
}

// ServerLog is one line of a server's own progress (an install, a
// start).
type ServerLog struct{ Line string }

// Notice is a message about a target (Target "" for the run): a warning,
// a fault action, a directory moved elsewhere.
type Notice struct{ Target, Text string }

// StepStarted: the worker starts running the step.
type StepStarted struct {
	Study  string
	Target string
	Step   Step
}

// Tick is a running step's figures, once per measurement tick (about a
// second): operations done of Total (0: unknown), Elapsed since the step
// started.
type Tick struct {
	Target  string
	Step    Step
	Done    int64
	Total   int64
	Elapsed time.Duration
}

// Outcome of a step.
const (
	StepOK      = "ok"
	StepFailed  = "failed"
	StepStopped = "stopped"
	StepPartial = "partial" // stopped, with what it measured kept
)

// StepFinished: the step ended with Outcome; Result is what it measured
// (nil when it measured nothing), Why the error or the reason it
// stopped.
type StepFinished struct {
	Study   string
	Target  string
	Step    Step
	Outcome string
	Why     string
	Result  *results.Step
	Run     *results.Run
}

// TargetFailed: the target could not be got going (or its run was
// stopped meanwhile: Stopped). How qualifies it (" to open").
type TargetFailed struct {
	Target  string
	How     string
	Reason  string
	Stopped bool
}

// TargetFinished: the target is done, its status in Target.
type TargetFinished struct {
	Run    *results.Run
	Target *results.Target
}

// RunFinished: the run is over (complete, partial or failed), its data
// removed unless kept.
type RunFinished struct {
	Run *results.Run
	Dir string
}

// RunInterrupted: the run was stopped by the user; what was measured is
// in Run.
type RunInterrupted struct {
	Run *results.Run
	Dir string
}

func (RunPlanned) event()        {}
func (TargetUnavailable) event() {}
func (StepNA) event()            {}
func (TargetStarted) event()     {}
func (ServerStarting) event()    {}
func (ServerReady) event()       {}
func (ServerStopped) event()     {}
func (ServerLog) event()         {}
func (Notice) event()            {}
func (StepStarted) event()       {}
func (Tick) event()              {}
func (StepFinished) event()      {}
func (TargetFailed) event()      {}
func (TargetFinished) event()    {}
func (RunFinished) event()       {}
func (RunInterrupted) event()    {}

// Output renders events. Handle is called from one goroutine at a time,
// in the order of the events, and must not block for long: the run waits
// for it. Its error matters for RunPlanned (the run does not start) and
// for RunFinished and RunInterrupted (the run's error); the others' are
// the output's own to report. Close releases what the output holds (a
// listener, open files) once the run is over.
type Output interface {
	Handle(Event) error
	Close() error
}

// List fans every event out to its outputs, in order.
type List []Output

// Handle gives e to every output and returns the first error. An error
// on the run's first or last event (RunPlanned, RunFinished,
// RunInterrupted) stops there: the outputs after may build on what the
// ones before wrote (the report is rendered only once results.json is
// written whole). Other events reach every output either way.
func (l List) Handle(e Event) error {
	var first error
	for _, o := range l {
		if o == nil {
			continue
		}
		if err := o.Handle(e); err != nil && first == nil {
			first = err
			if decisive(e) {
				return err
			}
		}
	}
	return first
}

func decisive(e Event) bool {
	switch e.(type) {
	case RunPlanned, RunFinished, RunInterrupted:
		return true
	}
	return false
}

// Close closes every output and joins their errors.
func (l List) Close() error {
	var errs []error
	for _, o := range l {
		if o != nil {
			errs = append(errs, o.Close())
		}
	}
	return errors.Join(errs...)
}
