package server

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/server/proc"
)

// Launch starts the process, hands it to ready and logs how long it took;
// a failed ready is its error, and StopFunc stops the process.
func TestLaunch(t *testing.T) {
	var log strings.Builder
	spec := proc.Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, LogPath: filepath.Join(t.TempDir(), "sleep.log")}
	h, err := Launch(context.Background(), Config{Log: &log}, "fake", spec, func(h *proc.Handle) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := StopFunc(h, syscall.SIGTERM)(context.Background()); err != nil {
		t.Errorf("stop: %v", err)
	}
	if !strings.Contains(log.String(), "fake: ready in ") {
		t.Errorf("log %q", log.String())
	}
	boom := errors.New("boom")
	h2, err := Launch(context.Background(), Config{}, "fake", spec, func(h *proc.Handle) error {
		_ = proc.Stop(context.Background(), h, syscall.SIGTERM, 5*time.Second)
		return boom
	})
	if h2 != nil || err != boom {
		t.Errorf("failed ready: %v, %v", h2, err)
	}
	spec.Path = filepath.Join(t.TempDir(), "no-such-program")
	if _, err := Launch(context.Background(), Config{}, "fake", spec, func(h *proc.Handle) error { return nil }); err == nil || !strings.HasPrefix(err.Error(), "fake: ") {
		t.Errorf("no program: %v", err)
	}
}
