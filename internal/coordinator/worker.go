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
	"sync"
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
	events chan wire.Event
	exited chan struct{}
	logf   string
	nextID atomic.Int64
	hello  wire.Hello
	// garbage is why the stream was abandoned, if it was: a line that is
	// not a protocol event (see fault).
	garbageMu sync.Mutex
	garbage   error
	writeMu   sync.Mutex
	// host is where the worker runs ("local" or the ssh destination).
	host string
	// stderr is the end of the worker's stderr, kept here as well as in
	// its log: on a full disk the log cannot hold the worker's last
	// words, which say why it died. stderrDone closes when it is all read.
	stderr     *tailBuffer
	stderrDone chan struct{}
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const stderrTail = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-stderrTail:]...)
	}
	return len(p), nil
}

// lines is the last n lines held, joined by " | ".
func (t *tailBuffer) lines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLines(string(t.buf), n)
}

// teeStderr gives cmd a pipe for its stderr whose every byte goes to log
// (errors ignored: a full disk must not block the worker) and to tail.
// The pipe's write end is the child's alone once started (closeChild), so
// the copy ends when the child and whatever inherited it exit.
func teeStderr(cmd *exec.Cmd, log io.Writer, tail *tailBuffer) (closeChild func(), done chan struct{}, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = w
	done = make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, rerr := r.Read(buf)
			if n > 0 {
				tail.Write(buf[:n])
				_, _ = log.Write(buf[:n])
			}
			if rerr != nil {
				return
			}
		}
	}()
	return func() { w.Close() }, done, nil
}

func (p *proc) setFault(err error) {
	p.garbageMu.Lock()
	defer p.garbageMu.Unlock()
	if p.garbage == nil {
		p.garbage = err
	}
}

// fault is the protocol fault that made us abandon the worker, or nil.
func (p *proc) fault() error {
	p.garbageMu.Lock()
	defer p.garbageMu.Unlock()
	return p.garbage
}

// Bounds on what the coordinator waits for from a worker. Every wait has
// one, so a worker that hangs, stops answering or talks nonsense fails its
// target with a reason instead of hanging the run.
type bounds struct {
	// hello: from start to the worker's hello.
	hello time.Duration
	// silence: the longest a worker handling a request may go without a
	// single event; it sends a heartbeat every wire.HeartbeatEvery.
	silence time.Duration
	// perCmd bounds a whole request by command; a command without an
	// entry (a step) has only the silence bound, since its length is the
	// study's (time limits govern it).
	perCmd map[string]time.Duration
	// cancelGrace is how long a cancelled request has to answer before
	// the worker is killed: Ctrl-C must stop a run within 2 s.
	cancelGrace time.Duration
	// send bounds writing one request to the worker's stdin.
	send time.Duration
}

// limits are the bounds in force; tests shorten them.
var limits = bounds{
	hello:   30 * time.Second,
	silence: 30 * time.Second,
	perCmd: map[string]time.Duration{
		// Opening may wait for a server that is still coming up
		// (Cassandra takes a minute).
		wire.CmdOpen:    2 * time.Minute,
		wire.CmdSample:  30 * time.Second,
		wire.CmdClose:   2 * time.Minute,
		wire.CmdDestroy: 2 * time.Minute,
		wire.CmdQuit:    2 * time.Minute,
	},
	cancelGrace: 1500 * time.Millisecond,
	send:        10 * time.Second,
}

// startWorker runs `exe worker` with its stderr going to logPath.
func startWorker(exe, logPath string) (*proc, error) {
	p, err := startCmd(exec.Command(exe, "worker"), logPath)
	if p != nil {
		p.host = "local"
	}
	return p, err
}

// startCmd starts cmd, which runs a worker (here or through ssh), with
// its stderr going to logPath, and waits for its hello.
func startCmd(cmd *exec.Cmd, logPath string) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("worker log: %w", err)
	}
	tail := &tailBuffer{}
	closeChild, stderrDone, err := teeStderr(cmd, logFile, tail)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("worker log: %w", err)
	}
	// Its own process group: a Ctrl-C at the terminal reaches only the
	// coordinator, which then cancels the worker's step over the protocol
	// and gets back what was measured so far.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The log closes when the worker's stderr has all been copied to it.
	go func() { <-stderrDone; logFile.Close() }()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		closeChild()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		closeChild()
		return nil, err
	}
	// Tied to us: a worker must not outlive a coordinator killed with -9.
	release, err := sproc.StartTied(cmd)
	closeChild() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	p := &proc{cmd: cmd, stdin: stdin, events: make(chan wire.Event, 64), exited: make(chan struct{}), logf: logPath,
		stderr: tail, stderrDone: stderrDone}
	go p.readEvents(stdout, release)
	select {
	case e, ok := <-p.events:
		if err := p.fault(); !ok && err != nil {
			p.kill()
			return nil, fmt.Errorf("worker did not start: %v", err)
		}
		if !ok || e.Type != wire.EvHello || e.Hello == nil {
			p.kill()
			if ok {
				return nil, fmt.Errorf("worker did not start: its first event is %q, not hello", e.Type)
			}
			return nil, fmt.Errorf("worker did not start: %s", p.died())
		}
		if e.Hello.Protocol != wire.Version {
			p.kill()
			return nil, fmt.Errorf("worker speaks protocol %d, coordinator %d", e.Hello.Protocol, wire.Version)
		}
		p.hello = *e.Hello
	case <-time.After(limits.hello):
		p.kill()
		return nil, fmt.Errorf("worker sent no hello within %v; killed", limits.hello)
	}
	return p, nil
}

// readEvents passes the worker's events from stdout to p.events until
// the stream ends or turns to garbage (then the worker is killed, since
// nothing after a corrupt line can be trusted), then reaps the worker,
// calls release and closes p.exited once its stderr is in the log. It
// runs in its own goroutine for the worker's life.
func (p *proc) readEvents(stdout io.Reader, release func()) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var e wire.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Type == "" {
			// The protocol has a private descriptor in the worker
			// (stray prints go to its log), so a line that is not an
			// event means the stream is corrupt: nothing after it can
			// be trusted.
			p.setFault(fmt.Errorf("worker sent garbage: %s", clip(sc.Bytes(), 80)))
			p.signalKill()
			break
		}
		p.events <- e
	}
	if err := sc.Err(); err != nil {
		p.setFault(fmt.Errorf("worker sent garbage: %v", err))
		p.signalKill()
	}
	close(p.events)
	_ = p.cmd.Wait()
	release()
	// Its stderr reaches the log before it counts as exited (bounded:
	// a descendant may have inherited the pipe).
	select {
	case <-p.stderrDone:
	case <-time.After(2 * time.Second):
	}
	close(p.exited)
}

// send writes one request, within limits.send: a worker that stopped
// reading its input is killed rather than waited for.
func (p *proc) send(r wire.Request) (int64, error) {
	if r.ID == 0 && r.Cmd != wire.CmdCancel {
		r.ID = p.nextID.Add(1)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("encoding a %s request: %w", r.Cmd, err)
	}
	b = append(b, '\n')
	written := make(chan error, 1)
	go func() {
		// Requests go whole, one after another: a start or cancel sent
		// from the barrier's goroutine must not split another's line.
		p.writeMu.Lock()
		defer p.writeMu.Unlock()
		_, err := p.stdin.Write(b)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return 0, fmt.Errorf("worker died: %s", p.died())
		}
	case <-time.After(limits.send):
		p.kill() // the write fails once the worker is gone
		return 0, fmt.Errorf("worker did not read a %s request within %v; killed", r.Cmd, limits.send)
	}
	return r.ID, nil
}

// call sends a request and waits for its done or error event, passing
// progress events to onProgress.
func (p *proc) call(r wire.Request, onProgress func(wire.Progress)) (wire.Event, error) {
	return p.callCtx(context.Background(), r, onProgress)
}

// callCtx is call that, when ctx ends, asks the worker to cancel the
// request and gives it limits.cancelGrace to answer with what it measured
// before killing it.
//
// The worker is killed, and the call fails saying why, when it breaks the
// protocol (garbage, an answer to a request that was never sent, a
// request it could not read), when it is silent for limits.silence, or
// when the request outlasts its bound in limits.perCmd.
func (p *proc) callCtx(ctx context.Context, r wire.Request, onProgress func(wire.Progress)) (wire.Event, error) {
	return p.callStep(ctx, r, onProgress, nil)
}

// callStep is callCtx for a step shared with other workers: onReady is
// called for each ready event (the worker waits at the step's barrier).
// Without onReady a ready event breaks the protocol.
func (p *proc) callStep(ctx context.Context, r wire.Request, onProgress func(wire.Progress), onReady func(timed bool)) (wire.Event, error) {
	id, err := p.send(r)
	if err != nil {
		return wire.Event{}, err
	}
	silence := time.NewTimer(limits.silence)
	defer silence.Stop()
	var whole <-chan time.Time
	if d := limits.perCmd[r.Cmd]; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		whole = t.C
	}
	ctxDone := ctx.Done()
	var deadline <-chan time.Time
	for {
		select {
		case e, ok := <-p.events:
			if !ok {
				if err := p.fault(); err != nil {
					p.kill()
					return wire.Event{}, err
				}
				return wire.Event{}, fmt.Errorf("worker died: %s", p.died())
			}
			silence.Reset(limits.silence)
			if e.Type == wire.EvProtocolError {
				p.kill()
				return wire.Event{}, fmt.Errorf("worker could not read the %s request: %s", r.Cmd, e.Error)
			}
			if e.ID != id {
				// Lower IDs are late events of an earlier request (a
				// cancelled step's last progress). ID 0 is only for hello
				// and protocol errors, and higher IDs were never sent: a
				// worker that answers with them will never answer this.
				if e.ID == 0 || e.ID > id {
					p.kill()
					return wire.Event{}, fmt.Errorf("worker broke the protocol: a %q event with id %d while request %d (%s) waits", e.Type, e.ID, id, r.Cmd)
				}
				continue
			}
			switch e.Type {
			case wire.EvProgress:
				if onProgress != nil && e.Progress != nil {
					onProgress(*e.Progress)
				}
			case wire.EvHeartbeat:
			case wire.EvReady:
				if onReady == nil {
					p.kill()
					return wire.Event{}, fmt.Errorf("worker broke the protocol: ready for a %s that is not shared", r.Cmd)
				}
				onReady(e.Timed)
			case wire.EvDone:
				return e, nil
			case wire.EvError:
				return e, fmt.Errorf("%s", e.Error)
			default:
				p.kill()
				return wire.Event{}, fmt.Errorf("worker broke the protocol: unknown event type %q", clip([]byte(e.Type), 40))
			}
		case <-silence.C:
			p.kill()
			return wire.Event{}, fmt.Errorf("worker stopped answering: nothing heard for %v during %s; killed", limits.silence, r.Cmd)
		case <-whole:
			p.kill()
			return wire.Event{}, fmt.Errorf("worker did not finish %s within %v; killed", r.Cmd, limits.perCmd[r.Cmd])
		case <-ctxDone:
			ctxDone = nil
			if _, err := p.send(wire.Request{Cmd: wire.CmdCancel}); err != nil {
				return wire.Event{}, err
			}
			deadline = time.After(limits.cancelGrace)
		case <-deadline:
			p.kill()
			return wire.Event{}, fmt.Errorf("worker did not stop within %v of cancellation; killed", limits.cancelGrace)
		}
	}
}

// clip quotes at most n bytes of b for a message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// died describes how the worker ended, with the tail of its log.
func (p *proc) died() string {
	if err := p.fault(); err != nil {
		return err.Error()
	}
	wait := time.After(2 * time.Second)
	select {
	case <-p.exited:
	case <-wait:
	}
	status := "still running"
	if ps := p.cmd.ProcessState; ps != nil {
		status = ps.String()
	}
	// Its last words from its stderr as it wrote them: the log file may
	// not hold them (a full disk).
	tail := ""
	if p.stderr != nil {
		select {
		case <-p.stderrDone:
		case <-wait:
		}
		tail = p.stderr.lines(5)
	}
	if tail == "" {
		tail = logTail(p.logf, 5)
	}
	if tail == "" {
		return status
	}
	return status + "; log: " + tail
}

// withoutTrace is s up to the first goroutine trace of a Go panic or
// fatal error ("goroutine 1 [running]:" and the stack under it), with a
// note that the trace is in the log: a reason says what went wrong (the
// "panic: ..." line above the trace), its log file keeps how.
func withoutTrace(s string) string {
	for i := 0; i < len(s); {
		line := s[i:]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		if isTraceStart(line) {
			return strings.TrimRight(s[:i], "\n") + "\n(goroutine trace in the worker's log)"
		}
		i += len(line) + 1
	}
	return s
}

// isTraceStart says whether line opens a goroutine's stack in a Go
// panic: "goroutine 17 [running]:", "goroutine 1 gp=0x... m=0 mp=... [running]:".
func isTraceStart(line string) bool {
	rest, ok := strings.CutPrefix(line, "goroutine ")
	if !ok || rest == "" || rest[0] < '0' || rest[0] > '9' {
		return false
	}
	return strings.Contains(rest, "[") && strings.HasSuffix(strings.TrimSpace(rest), "]:")
}

// signalKill kills the worker's process group without waiting.
func (p *proc) signalKill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// kill kills the worker and waits (boundedly: a descendant that left the
// group could hold its stdout open) for its end to be read.
func (p *proc) kill() {
	p.signalKill()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
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
	return lastLines(string(b), n)
}

// lastLines is the last n lines of s, joined by " | ", a Go panic's
// goroutine trace left out (withoutTrace).
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(withoutTrace(s)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}
