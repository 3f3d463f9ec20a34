package coordinator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/server/servertest"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// fakeWorkerEnv makes the test binary, started as `<test binary> worker`
// by startWorker, play a misbehaving worker instead of running the tests.
const fakeWorkerEnv = "STOREBENCH_FAKE_WORKER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeWorkerEnv); mode != "" {
		os.Exit(fakeWorker(mode))
	}
	// The test binary also stands in for storebench's server-main (the
	// FerretDB server of TestExternalServerKeepsForeignData).
	servertest.Main(m)
}

// fakeWorker speaks (or fails to speak) the protocol as mode says.
func fakeWorker(mode string) int {
	emit := func(e wire.Event) {
		b, _ := json.Marshal(e)
		os.Stdout.Write(append(b, '\n'))
	}
	if mode == "garbage-hello" {
		fmt.Println("Segmentation fault (core dumped)")
		time.Sleep(time.Hour)
		return 1
	}
	emit(wire.Event{Type: wire.EvHello, Hello: &wire.Hello{Protocol: wire.Version, PID: os.Getpid()}})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var r wire.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return 3
		}
		switch mode {
		case "garbage":
			// What a C library printing on the protocol stream looks like.
			fmt.Println("\x1b[31mrocksdb: WARN something\x1b[0m " + strings.Repeat("x", 200))
		case "silent":
			// Reads its requests and never answers, as a deadlocked or
			// stopped worker would.
		case "id0":
			emit(wire.Event{Type: wire.EvDone})
		case "id0-error":
			// What the old worker answered to a request it could not read.
			emit(wire.Event{Type: wire.EvError, Error: "bad request: invalid character"})
		case "future-id":
			emit(wire.Event{ID: r.ID + 5, Type: wire.EvDone})
		case "enospc":
			// An engine that meets a full disk and exits, its last words
			// on stderr (whose log is on that disk).
			fmt.Fprintln(os.Stderr, "pebble: write 000004.log: no space left on device")
			return 1
		case "protocol-error":
			emit(wire.Event{Type: wire.EvProtocolError, Error: `bad request "{\"id\":tru"`})
		case "heartbeat-only":
			// Alive but never done: a request that outlasts its bound.
			for {
				emit(wire.Event{ID: r.ID, Type: wire.EvHeartbeat})
				time.Sleep(limitsForFake.silence / 4)
			}
		case "slow":
			// A long quiet request that keeps sending heartbeats must not
			// be taken for a dead worker.
			for t0 := time.Now(); time.Since(t0) < 3*limitsForFake.silence; {
				emit(wire.Event{ID: r.ID, Type: wire.EvHeartbeat})
				time.Sleep(limitsForFake.silence / 4)
			}
			emit(wire.Event{ID: r.ID - 1, Type: wire.EvProgress, Progress: &wire.Progress{Done: 1}}) // a stale event: ignored
			emit(wire.Event{ID: r.ID, Type: wire.EvDone})
		}
	}
	return 0
}

// limitsForFake are the short bounds of these tests, known to both sides.
var limitsForFake = bounds{
	hello:       3 * time.Second,
	silence:     400 * time.Millisecond,
	perCmd:      map[string]time.Duration{wire.CmdOpen: 1500 * time.Millisecond, wire.CmdQuit: time.Second},
	cancelGrace: 300 * time.Millisecond,
	send:        time.Second,
}

func startFake(t *testing.T, mode string) (*proc, error) {
	t.Helper()
	saved := limits
	limits = limitsForFake
	t.Cleanup(func() { limits = saved })
	t.Setenv(fakeWorkerEnv, mode)
	return startWorker(os.Args[0], filepath.Join(t.TempDir(), "worker.log"))
}

// Every way a worker can break the protocol fails the call within its
// bound, with a reason that says what happened, and leaves no process.
func TestMisbehavingWorkerFailsWithinBounds(t *testing.T) {
	open := wire.Request{Cmd: wire.CmdOpen, Open: &wire.OpenArgs{Target: "pebble"}}
	step := wire.Request{Cmd: wire.CmdStep, Step: &workload.Step{Workload: "ledger", Phase: "insert", N: 10}}
	cases := []struct {
		mode  string
		req   wire.Request
		want  string
		bound time.Duration
	}{
		{"garbage", open, `worker sent garbage: "\x1b[31mrocksdb: WARN`, time.Second},
		{"silent", open, "worker stopped answering: nothing heard for 400ms during open", limitsForFake.silence + time.Second},
		{"silent", step, "worker stopped answering: nothing heard for 400ms during step", limitsForFake.silence + time.Second},
		{"id0", open, `worker broke the protocol: a "done" event with id 0 while request 1 (open) waits`, time.Second},
		{"id0-error", step, `worker broke the protocol: a "error" event with id 0`, time.Second},
		{"future-id", step, `worker broke the protocol: a "done" event with id 6 while request 1 (step) waits`, time.Second},
		{"protocol-error", open, "worker could not read the open request: bad request", time.Second},
		{"heartbeat-only", open, "worker did not finish open within 1.5s; killed", limitsForFake.perCmd[wire.CmdOpen] + time.Second},
	}
	for _, c := range cases {
		t.Run(c.mode+"/"+c.req.Cmd, func(t *testing.T) {
			p, err := startFake(t, c.mode)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = p.call(c.req, nil)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("call succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\ndoes not contain %q", err, c.want)
			}
			if took > c.bound {
				t.Errorf("failed after %v, bound %v", took, c.bound)
			}
			if strings.Contains(c.want, "garbage") && len(err.Error()) > 150 {
				t.Errorf("the garbage is not clipped: %d bytes of message", len(err.Error()))
			}
			select {
			case <-p.exited:
			case <-time.After(2 * time.Second):
				t.Errorf("the worker is still running after the call failed")
			}
		})
	}
}

func TestGarbageInsteadOfHello(t *testing.T) {
	_, err := startFake(t, "garbage-hello")
	if err == nil || !strings.Contains(err.Error(), `worker did not start: worker sent garbage: "Segmentation fault`) {
		t.Fatalf("startWorker: %v", err)
	}
}

// A quiet request that keeps sending heartbeats is waited for, however
// long it is silent otherwise; stale events of earlier requests are
// skipped.
func TestHeartbeatsKeepALongRequestAlive(t *testing.T) {
	p, err := startFake(t, "slow")
	if err != nil {
		t.Fatal(err)
	}
	defer p.kill()
	p.nextID.Store(4) // as if four requests had been answered already
	step := wire.Request{Cmd: wire.CmdStep, Step: &workload.Step{Workload: "ledger", Phase: "insert", N: 10}}
	if _, err := p.call(step, nil); err != nil {
		t.Fatalf("a request that sent heartbeats was failed: %v", err)
	}
}

// A cancelled request that the worker does not end is killed after the
// grace period.
func TestCancelOfASilentWorker(t *testing.T) {
	p, err := startFake(t, "heartbeat-only")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	step := wire.Request{Cmd: wire.CmdStep, Step: &workload.Step{Workload: "ledger", Phase: "insert", N: 10}}
	_, err = p.callCtx(ctx, step, nil)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 300ms of cancellation") {
		t.Fatalf("callCtx: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
}

// A worker that dies on a full disk is failed with its last words, though
// its log, on that disk, could not keep them: "worker died: exit status
// 1" alone does not say why.
func TestWorkerDeathOnAFullDiskNamesTheError(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a small tmpfs and must run as root (make test does in CI); uid %d", os.Getuid())
	}
	dir := t.TempDir()
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, b)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	// Fill it.
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	saved := limits
	limits = limitsForFake
	t.Cleanup(func() { limits = saved })
	t.Setenv(fakeWorkerEnv, "enospc")
	p, err := startWorker(os.Args[0], filepath.Join(dir, "worker.log"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.call(wire.Request{Cmd: wire.CmdOpen, Open: &wire.OpenArgs{Target: "pebble"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "worker died: exit status 1") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("call: %v", err)
	}
}

// A worker that panics (a store's panic on a full disk) is failed with
// its panic's message, not the tail of its goroutine trace: the trace
// stays in the worker's log.
func TestWorkerDeathReasonLeavesOutTheTrace(t *testing.T) {
	stderr := `opening store
panic: pebble: error writing WAL: write /data/000002.log: no space left on device

goroutine 42 [running]:
github.com/cockroachdb/pebble.(*DB).commitWrite(0xc000123456)
	/root/go/pkg/mod/github.com/cockroachdb/pebble@v1.1.0/db.go:901 +0x1a5
storebench/internal/worker.(*Worker).serve(0xc000010000)
	/work/main/internal/worker/worker.go:120 +0x55
created by storebench/internal/worker.Main in goroutine 1
	/work/main/internal/worker/worker.go:80 +0x99
`
	tb := &tailBuffer{}
	tb.Write([]byte(stderr))
	got := tb.lines(5)
	if !strings.Contains(got, "panic: pebble: error writing WAL: write /data/000002.log: no space left on device") ||
		strings.Contains(got, "goroutine 42") || strings.Contains(got, "+0x") || strings.Contains(got, ".go:") {
		t.Errorf("reason from a panic's stderr: %q; want its panic line and no trace", got)
	}
	if got := lastLines("a\nb\ngoroutine lines were counted\n", 5); got != "a | b | goroutine lines were counted" {
		t.Errorf("lastLines of a log without a trace = %q", got)
	}
}
