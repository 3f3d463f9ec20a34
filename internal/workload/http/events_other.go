//go:build !linux

package http

import (
	"context"

	"storebench/internal/runner"
)

// events is the event-loop client, Linux only; elsewhere every step
// uses the goroutine client.
type events struct {
	loops   int
	tallies []*tally
}

func newEvents(*run, int, int) *events { return nil }

func (*events) drive(context.Context, *runner.Loop) error { return nil }
