// Package resultsfile is the output that keeps results.json: written when
// the run is planned (status "running", every target pending), again when
// a target starts, after every step and every target, so that a kill -9
// of storebench loses at most the step under way, and at the end with
// the run's final status.
package resultsfile

import (
	"path/filepath"

	"storebench/internal/event"
	"storebench/internal/results"
)

// File writes the run's results.json in its results directory.
type File struct{ path string }

// New returns the output; the directory comes with RunPlanned.
func New() *File { return &File{} }

// Handle writes results.json on the events that change what it holds.
// Only the first write (RunPlanned) and the last (RunFinished,
// RunInterrupted) fail the run; the ones between are tried again at the
// next event.
func (f *File) Handle(e event.Event) error {
	var run *results.Run
	switch e := e.(type) {
	case event.RunPlanned:
		f.path = filepath.Join(e.Dir, "results.json")
		run = e.Run
	case event.TargetStarted:
		run = e.Run
	case event.StepFinished:
		run = e.Run
	case event.TargetFinished:
		run = e.Run
	case event.RunFinished:
		run = e.Run
	case event.RunInterrupted:
		run = e.Run
	}
	if run == nil || f.path == "" {
		return nil
	}
	return run.Write(f.path)
}

// Close does nothing: every write is whole.
func (f *File) Close() error { return nil }
