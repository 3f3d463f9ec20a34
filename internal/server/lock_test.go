package server

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The instance lock serialises its holders, waits no longer than its
// bound, gives up when the context ends, and survives clearing the
// instance directory.
func TestLockInstance(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockInstance(context.Background(), dir, "memcached", time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, busy := InstanceBusy(dir, "memcached"); !busy {
		t.Error("InstanceBusy: false while locked")
	}
	if err := os.WriteFile(filepath.Join(dir, "memcached", "instance.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ClearInstanceDir(dir, "memcached"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err = LockInstance(context.Background(), dir, "memcached", 300*time.Millisecond, io.Discard)
	if !errors.Is(err, ErrBusy) || time.Since(t0) < 300*time.Millisecond || time.Since(t0) > 5*time.Second {
		t.Errorf("second lock: %v after %s; want ErrBusy after 300ms", err, time.Since(t0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	_, err = LockInstance(ctx, dir, "memcached", time.Hour, io.Discard)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
		t.Errorf("lock under an ending context: %v after %s", err, time.Since(t0))
	}
	unlock()
	if _, busy := InstanceBusy(dir, "memcached"); busy {
		t.Error("InstanceBusy: true once unlocked")
	}
	unlock2, err := LockInstance(context.Background(), dir, "memcached", time.Second, io.Discard)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}
