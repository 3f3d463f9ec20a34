package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"storebench/internal/server/proc"
)

// fakeServer is a process standing for a server left running: in its own
// group, not tied to us, as a leftover of a dead run is.
func fakeServer(t *testing.T) (pid int, start uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	start, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, start
}

// deadOwner is the PID and start time of a process that has exited.
func deadOwner(t *testing.T) (pid int, start uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return cmd.Process.Pid, start
}

func writeLease(t *testing.T, l lease) string {
	t.Helper()
	if err := os.MkdirAll(LeaseDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(LeaseDir(), fmt.Sprintf("%d-%s-%d.json", l.Owner, l.Name, l.PID))
	b, _ := json.Marshal(l)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A server whose run died is listed as a leftover, then stopped (and its
// lease and out-of-run data removed) by the next start; a server of a
// live run, and a PID now held by another process, are left alone.
func TestReapLeftovers(t *testing.T) {
	t.Setenv("STOREBENCH_HOME", t.TempDir())
	owner, ownerStart := deadOwner(t)
	leftover, leftoverStart := fakeServer(t)
	data := t.TempDir()
	dead := writeLease(t, lease{Name: "redis", PID: leftover, PIDStart: leftoverStart, Owner: owner, OwnerStart: ownerStart,
		StopSignal: "SIGTERM", Dir: "/somewhere", Remove: data})

	live, liveStart := fakeServer(t)
	me, meStart := os.Getpid(), mustStart(t, os.Getpid())
	ours := writeLease(t, lease{Name: "postgres", PID: live, PIDStart: liveStart, Owner: me, OwnerStart: meStart, StopSignal: "SIGINT"})

	reused, reusedStart := fakeServer(t)
	stranger := writeLease(t, lease{Name: "mariadb", PID: reused, PIDStart: reusedStart + 1, Owner: owner, OwnerStart: ownerStart, StopSignal: "SIGTERM"})

	ls, err := Leased()
	if err != nil || len(ls) != 3 {
		t.Fatalf("Leased: %+v, %v", ls, err)
	}
	for _, l := range ls {
		switch l.Name {
		case "redis":
			if l.PID != leftover || l.OwnerAlive {
				t.Errorf("leftover listed as %+v", l)
			}
		case "postgres":
			if l.PID != live || !l.OwnerAlive {
				t.Errorf("live server listed as %+v", l)
			}
		case "mariadb":
			if l.PID != 0 {
				t.Errorf("a reused PID listed as the server: %+v", l)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := ReapLeftovers(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if proc.Alive(leftover) {
		t.Errorf("the leftover (pid %d) still runs", leftover)
	}
	if time.Since(t0) > 10*time.Second {
		t.Errorf("reaping took %s", time.Since(t0))
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead run's lease is still there: %v", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the dead run's data outside its run directory is still there: %v", err)
	}
	if !proc.Alive(live) {
		t.Errorf("the server of a live run was stopped")
	}
	if _, err := os.Stat(ours); err != nil {
		t.Errorf("the live run's lease was removed: %v", err)
	}
	if !proc.Alive(reused) {
		t.Errorf("a process that took a leftover's PID was signalled")
	}
	if _, err := os.Stat(stranger); !os.IsNotExist(err) {
		t.Errorf("the lease of a gone server is still there: %v", err)
	}
}

func mustStart(t *testing.T, pid int) uint64 {
	t.Helper()
	s, err := proc.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
