package powerfs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/server/proc"
)

const childEnv = "STOREBENCH_POWERFS_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		// A storebench stand-in that mounts and then waits to be killed.
		mt, err := New(context.Background(), dir, "")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(mt.Dir, mt.cmd.Process.Pid)
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kill -9 of the process that mounted leaves no server and no mount
// behind: the server gets SIGTERM from the kernel and unmounts; Reap,
// run by the next mount, cleans up whatever is left.
func TestNothingLeftAfterKill9(t *testing.T) {
	need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] == "error" {
		t.Fatalf("child: %q", line)
	}
	mnt := f[0]
	pid, _ := strconv.Atoi(f[1])
	if !mounted(mnt) || !proc.Alive(pid) {
		t.Fatalf("child's mount %s (server pid %d) not there", mnt, pid)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for proc.Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if proc.Alive(pid) {
		t.Errorf("server pid %d still running 30s after its storebench was killed", pid)
	}
	if mounted(mnt) {
		t.Errorf("%s still mounted after its server exited", mnt)
	}
	if err := Reap(context.Background(), os.Stderr); err != nil {
		t.Error(err)
	}
	if mounted(mnt) {
		t.Errorf("%s still mounted after Reap", mnt)
	}
}

// Died tells a server that exited on its own from one this package
// stopped; Close still unmounts what it left.
func TestDiedTellsACrashFromAStop(t *testing.T) {
	need(t)
	ctx := context.Background()
	m, err := New(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remount(ctx); err != nil {
		t.Fatal(err)
	}
	if died, _ := m.Died(); died {
		t.Fatal("Died after a remount")
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	if died, _ := m.Died(); !died {
		t.Error("Died says no after the server was killed")
	}
	_ = m.Close()
	if mounted(m.Dir) {
		t.Errorf("%s still mounted after Close", m.Dir)
	}
}
