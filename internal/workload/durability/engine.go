package durability

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/powerfs"
	"storebench/internal/reexec"
	"storebench/internal/server/proc"
	"storebench/internal/target"
)

// The engine runs in a process of its own, the one a crash kills: the
// same storebench binary, started as the helper process engineName
// (package reexec), opens the target and applies what the writers send
// it. Each writer has its own pair of pipes (no lock between writers);
// stdin and stdout carry the open and the reads of the check.
// Acknowledgements are logged by the writers in the process that started
// the engine, which the crash does not touch.
const engineName = "durability-engine"

// The engine registers itself, as the workload does, so that the
// binary's main (and this package's TestMain) start it through
// reexec.Main without naming this package.
func init() { reexec.Register(engineName, engineMain) }

// TestNoSyncEnv, set in the engine's environment, opens the engine with
// durability async whatever the step's class: the test-only setting that
// proves the check fails on an engine that acknowledges writes it did
// not fsync while it declares sync.
const TestNoSyncEnv = "STOREBENCH_DURABILITY_TEST_NOSYNC"

// spec is what the engine opens.
type spec struct {
	Target  string         `json:"target"`
	Options target.Options `json:"options"`
	Writers int            `json:"writers"`
}

// engineMain is the engine process: it opens the target named on stdin
// and serves the writers until stdin closes or says "close". It returns
// the exit status.
func engineMain() int {
	// Its worker stops it, and it dies with the worker (Pdeathsig): a
	// closed terminal must not kill it first.
	signal.Ignore(syscall.SIGHUP)
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	fail := func(err error) int {
		fmt.Fprintf(out, "e %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		out.Flush()
		return 1
	}
	line, err := in.ReadString('\n')
	if err != nil {
		return fail(fmt.Errorf("reading the engine's spec: %w", err))
	}
	var sp spec
	if err := json.Unmarshal([]byte(line), &sp); err != nil {
		return fail(fmt.Errorf("engine spec: %w", err))
	}
	if os.Getenv(TestNoSyncEnv) == "1" {
		sp.Options.Durability = kv.Async
	}
	info, err := target.Lookup(sp.Target)
	if err != nil {
		return fail(err)
	}
	if info.Open == nil {
		return fail(fmt.Errorf("%s: %s", sp.Target, info.Unavailable))
	}
	h, err := info.Open(sp.Options)
	if err != nil {
		return fail(fmt.Errorf("opening %s: %w", sp.Target, err))
	}
	st, ok := h.(kv.Store)
	if !ok {
		h.Close()
		return fail(fmt.Errorf("%s has no key-value store", sp.Target))
	}
	for w := 0; w < sp.Writers; w++ {
		r, wr := os.NewFile(uintptr(3+2*w), "req"), os.NewFile(uintptr(4+2*w), "resp")
		go serveWriter(st, r, wr)
	}
	fmt.Fprintln(out, "ready")
	out.Flush()
	for {
		line, err := in.ReadString('\n')
		if err != nil || strings.TrimSpace(line) == "close" {
			cerr := st.Close()
			if err == nil {
				if cerr != nil {
					return fail(cerr)
				}
				fmt.Fprintln(out, "closed")
				out.Flush()
			}
			return 0
		}
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != "g" {
			return fail(fmt.Errorf("bad command %q", line))
		}
		k, err := hex.DecodeString(f[1])
		if err != nil {
			return fail(err)
		}
		v, err := st.Get(k)
		switch {
		case errors.Is(err, kv.ErrNotFound):
			fmt.Fprintln(out, "nf")
		case err != nil:
			fmt.Fprintf(out, "e %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		default:
			fmt.Fprintf(out, "v %x\n", v)
		}
		out.Flush()
	}
}

// serveWriter applies one writer's requests: "p KEY VALUE" (a put) or
// "b KEY VALUE KEY VALUE ..." (an atomic batch), hex-encoded; each is
// answered "ok" once the engine returned, or "e MESSAGE".
func serveWriter(st kv.Store, r, w *os.File) {
	in := bufio.NewReaderSize(r, 1<<16)
	out := bufio.NewWriter(w)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		err = apply(st, f)
		if err != nil {
			fmt.Fprintf(out, "e %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			out.WriteString("ok\n")
		}
		if out.Flush() != nil {
			return
		}
	}
}

func apply(st kv.Store, f []string) error {
	if len(f) < 3 || len(f)%2 != 1 || (f[0] != "p" && f[0] != "b") {
		return fmt.Errorf("bad request")
	}
	kvs := make([][]byte, len(f)-1)
	for i, s := range f[1:] {
		b, err := hex.DecodeString(s)
		if err != nil {
			return err
		}
		kvs[i] = b
	}
	if f[0] == "p" {
		return st.Put(kvs[0], kvs[1])
	}
	b := st.NewBatch()
	for i := 0; i < len(kvs); i += 2 {
		b.Put(kvs[i], kvs[i+1])
	}
	return b.Commit()
}

// holder is what a trial crashes: an embedded engine's process (engine)
// or a server (srvEngine). The crash itself is its fault.Crasher.
type holder interface {
	fault.Crasher
	writer(w int) writerConn
	get(ctx context.Context, key []byte) ([]byte, error)
	// release frees the connections once no writer uses them.
	release()
	// close shuts down cleanly after the read-back.
	close(ctx context.Context) error
	// exited is closed once the process is gone.
	exited() <-chan struct{}
	// atomicBatches: the writers may write atomic batches.
	atomicBatches() bool
	// persistent: it keeps its data across a restart (memcached does
	// not: losing everything is what it is, not a failure).
	persistent() bool
	// declared is the server's own statement of its durability ("": the
	// class asked for): Aerospike Community Edition says async even in
	// a sync study.
	declared() string
	// mapping is how the server mapped the class onto its settings ("":
	// an embedded engine, whose target settings say it).
	mapping() string
	// promised is the longest the server promises to hold an
	// acknowledged write unsynced (server.FlushInterval; 0: no such
	// promise).
	promised() time.Duration
}

// writerConn is one writer's connection: write applies kvs (key, value,
// key, value...): one pair is a put, more an atomic batch.
type writerConn interface {
	write(kvs [][]byte) error
}

// timeouter is a writer connection whose engine may time a write out
// under load without having failed (Cassandra's write timeout, 2 s by
// default, under a loaded machine): the write is then neither
// acknowledged nor refused, and may still land (a phantom, allowed).
type timeouter interface{ timedOut(err error) bool }

// maxTimeouts in a row end a writer: an engine that times out every
// write has failed.
const maxTimeouts = 10

// engine is the writers' side of an engine process.
type engine struct {
	cmd     *exec.Cmd
	ctl     *os.File // our end of its stdin
	out     *os.File // our end of its stdout
	rd      *bufio.Reader
	writers []*conn
	done    chan struct{}
	log     string // its standard error
	sp      spec
	env     []string
	// mount holds the data on a power-loss trial (nil: kill -9 only).
	mount *powerfs.Mount
	// last is what the latest power failure dropped.
	last powerfs.Failure
}

var _ fault.Crasher = (*engine)(nil)

// conn is one writer's pipes.
type conn struct {
	req []byte
	w   *os.File
	r   *bufio.Reader
	f   *os.File
}

// openTimeout bounds an engine's open (recovery included) and a read.
const openTimeout = 2 * time.Minute

// startEngine starts the engine process and waits until it has opened
// the target (ready) or failed.
func startEngine(ctx context.Context, sp spec, env []string, logPath string, m *powerfs.Mount) (*engine, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	e := &engine{done: make(chan struct{}), log: logPath, sp: sp, env: env, mount: m}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	closeLater := []*os.File{logf}
	defer func() {
		for _, f := range closeLater {
			f.Close()
		}
	}()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	closeLater = append(closeLater, inR, outW)
	e.ctl, e.out, e.rd = inW, outR, bufio.NewReader(outR)
	cmd := exec.Command(exe)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logf
	cmd.Env = append(append(os.Environ(), reexec.Setting(engineName)), env...)
	for w := 0; w < sp.Writers; w++ {
		reqR, reqW, err := os.Pipe()
		if err != nil {
			e.closeFiles()
			return nil, err
		}
		respR, respW, err := os.Pipe()
		if err != nil {
			reqR.Close()
			reqW.Close()
			e.closeFiles()
			return nil, err
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, reqR, respW)
		closeLater = append(closeLater, reqR, respW)
		e.writers = append(e.writers, &conn{w: reqW, r: bufio.NewReaderSize(respR, 4096), f: respR})
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := proc.StartTied(cmd)
	if err != nil {
		e.closeFiles()
		return nil, fmt.Errorf("starting the engine process: %w", err)
	}
	e.cmd = cmd
	go func() {
		_ = cmd.Wait()
		release()
		close(e.done)
	}()
	b, _ := json.Marshal(sp)
	if _, err := e.ctl.Write(append(b, '\n')); err != nil {
		e.kill()
		return nil, fmt.Errorf("engine process: %w", err)
	}
	line, err := e.readLine(ctx)
	if err != nil {
		e.kill()
		return nil, err
	}
	if line != "ready" {
		e.kill()
		return nil, fmt.Errorf("engine process: %s", strings.TrimPrefix(line, "e "))
	}
	return e, nil
}

// readLine reads one line of the engine's stdout, within openTimeout.
func (e *engine) readLine(ctx context.Context) (string, error) {
	dl := time.Now().Add(openTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = e.out.SetReadDeadline(dl)
	line, err := e.rd.ReadString('\n')
	if err != nil {
		if msg := strings.TrimSpace(proc.LogTail(e.log, 5)); msg != "" {
			return "", fmt.Errorf("engine process: %w (%s)", err, msg)
		}
		return "", fmt.Errorf("engine process: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// get reads key through the engine process.
func (e *engine) get(ctx context.Context, key []byte) ([]byte, error) {
	if _, err := fmt.Fprintf(e.ctl, "g %x\n", key); err != nil {
		return nil, fmt.Errorf("engine process: %w", err)
	}
	line, err := e.readLine(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case line == "nf":
		return nil, kv.ErrNotFound
	case strings.HasPrefix(line, "v "):
		return hex.DecodeString(line[2:])
	}
	return nil, errors.New("engine: " + strings.TrimPrefix(line, "e "))
}

func (e *engine) exited() <-chan struct{} { return e.done }

func (e *engine) writer(w int) writerConn { return e.writers[w] }

// release: kill closed the pipes already (closing an os.File under a
// reader is safe).
func (e *engine) release() {}

func (e *engine) kill() {
	_ = e.cmd.Process.Kill()
	<-e.done
	e.closeFiles()
}

// Crash kills the engine's process (the writers get an error from its
// closed pipes); under fault.PowerLoss the mount drops what it held
// unsynced and is mounted again.
func (e *engine) Crash(ctx context.Context, kind string) error {
	e.kill()
	if kind != fault.PowerLoss {
		return nil
	}
	if e.mount == nil {
		return errors.New("power-loss: the engine's data is not on a power-loss mount")
	}
	f, err := e.mount.PowerFail(ctx)
	e.last = f
	return err
}

// LastFailure is what the latest power failure dropped.
func (e *engine) LastFailure() powerfs.Failure { return e.last }

// Restart starts the engine's process again on its data (its recovery
// is the open).
func (e *engine) Restart(ctx context.Context) error {
	ne, err := startEngine(ctx, e.sp, e.env, e.log, e.mount)
	if err != nil {
		return err
	}
	ne.last = e.last
	*e = *ne
	return nil
}

func (e *engine) atomicBatches() bool { return true }

func (e *engine) persistent() bool { return true }

func (e *engine) declared() string { return "" }

func (e *engine) mapping() string { return "" }

func (e *engine) promised() time.Duration { return 0 }

// close closes the store cleanly and waits for the process to exit.
func (e *engine) close(ctx context.Context) error {
	var err error
	if _, werr := e.ctl.WriteString("close\n"); werr == nil {
		var line string
		if line, err = e.readLine(ctx); err == nil && line != "closed" {
			err = errors.New("engine: " + strings.TrimPrefix(line, "e "))
		}
	}
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
		err = errors.Join(err, errors.New("engine process did not exit after closing"))
	}
	e.kill()
	return err
}

func (e *engine) closeFiles() {
	e.ctl.Close()
	e.out.Close()
	for _, c := range e.writers {
		c.w.Close()
		c.f.Close()
	}
}

// write sends "p KEY VALUE" or "b KEY VALUE KEY VALUE ..." (hex) and
// waits for the answer.
func (c *conn) write(kvs [][]byte) error {
	c.req = c.req[:0]
	if len(kvs) == 2 {
		c.req = append(c.req, 'p')
	} else {
		c.req = append(c.req, 'b')
	}
	for _, b := range kvs {
		c.req = append(c.req, ' ')
		c.req = hex.AppendEncode(c.req, b)
	}
	c.req = append(c.req, '\n')
	return c.send(c.req)
}

// send writes one request of a writer and waits for its answer.
func (c *conn) send(req []byte) error {
	if _, err := c.w.Write(req); err != nil {
		return err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	if line == "ok\n" {
		return nil
	}
	return &engineError{strings.TrimSpace(strings.TrimPrefix(line, "e "))}
}

// engineError is an error the engine returned for a write (not a crash).
type engineError struct{ msg string }

func (e *engineError) Error() string { return e.msg }
