// Package reportfile is the output that renders the report once the run
// is over: report.md, report.html and charts/ in the results directory
// (package report).
package reportfile

import (
	"storebench/internal/event"
	"storebench/internal/report"
)

// Report writes the run's report at its end.
type Report struct{}

// New returns the output.
func New() Report { return Report{} }

// Handle renders the report on RunFinished and RunInterrupted.
func (Report) Handle(e event.Event) error {
	switch e := e.(type) {
	case event.RunFinished:
		return report.WriteAll(e.Dir, e.Run)
	case event.RunInterrupted:
		return report.WriteAll(e.Dir, e.Run)
	}
	return nil
}

// Close does nothing.
func (Report) Close() error { return nil }
