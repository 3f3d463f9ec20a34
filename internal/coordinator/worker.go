package coordinator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	sproc "storebench/internal/server/proc"
	"storebench/internal/wire"
)

// proc is one worker child process and our end of its protocol stream.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	enc    *json.Encoder
	events chan wire.Event
	exited chan struct{}
	logf   string
	nextID atomic.Int64
	hello  wire.Hello
}

// startWorker runs `exe worker` with its stderr going to logPath.
func startWorker(exe, logPath string) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("worker log: %w", err)
	}
	cmd := exec.Command(exe, "worker")
	cmd.Stderr = logFile
	// Its own process group: a Ctrl-C at the terminal reaches only the
	// coordinator, which then cancels the worker's step over the protocol
	// and gets back what was measured so far.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	// Tied to us: a worker must not outlive a coordinator killed with -9.
	release, err := sproc.StartTied(cmd)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	logFile.Close() // the child holds its own descriptor
	p := &proc{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), events: make(chan wire.Event, 64), exited: make(chan struct{}), logf: logPath}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for sc.Scan() {
			var e wire.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				continue // not protocol: ignore rather than die
			}
			p.events <- e
		}
		close(p.events)
		_ = cmd.Wait()
		release()
		close(p.exited)
	}()
	select {
	case e, ok := <-p.events:
		if !ok || e.Type != wire.EvHello || e.Hello == nil {
			p.kill()
			return nil, fmt.Errorf("worker did not start: %s", p.died())
		}
		if e.Hello.Protocol != wire.Version {
			p.kill()
			return nil, fmt.Errorf("worker speaks protocol %d, coordinator %d", e.Hello.Protocol, wire.Version)
		}
		p.hello = *e.Hello
	case <-time.After(30 * time.Second):
		p.kill()
		return nil, fmt.Errorf("worker sent no hello within 30s")
	}
	return p, nil
}

func (p *proc) send(r wire.Request) (int64, error) {
	if r.ID == 0 {
		r.ID = p.nextID.Add(1)
	}
	if err := p.enc.Encode(r); err != nil {
		return 0, fmt.Errorf("worker is gone: %s", p.died())
	}
	return r.ID, nil
}

// call sends a request and waits for its done or error event, passing
// progress events to onProgress.
func (p *proc) call(r wire.Request, onProgress func(wire.Progress)) (wire.Event, error) {
	return p.callCtx(context.Background(), r, onProgress)
}

// callCtx is call that, when ctx ends, asks the worker to cancel the
// request and gives it cancelGrace to answer with what it measured before
// killing it: Ctrl-C must stop a run within 2 s.
func (p *proc) callCtx(ctx context.Context, r wire.Request, onProgress func(wire.Progress)) (wire.Event, error) {
	id, err := p.send(r)
	if err != nil {
		return wire.Event{}, err
	}
	ctxDone := ctx.Done()
	var deadline <-chan time.Time
	for {
		select {
		case e, ok := <-p.events:
			if !ok {
				return wire.Event{}, fmt.Errorf("worker died: %s", p.died())
			}
			if e.ID != id {
				continue
			}
			switch e.Type {
			case wire.EvProgress:
				if onProgress != nil && e.Progress != nil {
					onProgress(*e.Progress)
				}
			case wire.EvDone:
				return e, nil
			case wire.EvError:
				return e, fmt.Errorf("%s", e.Error)
			}
		case <-ctxDone:
			ctxDone = nil
			_, _ = p.send(wire.Request{Cmd: wire.CmdCancel})
			deadline = time.After(cancelGrace)
		case <-deadline:
			p.kill()
			return wire.Event{}, fmt.Errorf("worker did not stop within %v of cancellation; killed", cancelGrace)
		}
	}
}

const cancelGrace = 1500 * time.Millisecond

// died describes how the worker ended, with the tail of its log.
func (p *proc) died() string {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
	}
	status := "still running"
	if ps := p.cmd.ProcessState; ps != nil {
		status = ps.String()
	}
	tail := logTail(p.logf, 5)
	if tail == "" {
		return status
	}
	return status + "; log: " + tail
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.exited
}

// quit asks the worker to close its store and exit; it is killed if it
// has not done so within grace.
func (p *proc) quit(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		_, _ = p.call(wire.Request{Cmd: wire.CmdQuit}, nil)
		p.stdin.Close()
		<-p.exited
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		p.kill()
	}
}

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}
