package tripcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"storebench/internal/workload/tripcache/tripgen"
)

// generator is the tick generator's process.
type generator struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan struct{}
	err    error
}

// tailBuffer keeps the last few KiB the generator wrote to stderr, for
// the error message when it fails (and copies everything to the
// worker's own stderr, the target's log).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	os.Stderr.Write(p)
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4096:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(bytes.TrimSpace(t.buf)))
}

// startGenerator runs `<this executable> server-main tripgen ARGS`: the
// storebench binary (or, in a test, the test binary, whose TestMain
// dispatches the same command). It dies with the worker (Pdeathsig).
func startGenerator(cfg tripgen.Config, total uint64, args ...string) (*generator, error) {
	g, _, err := startGeneratorPipe(cfg, total, false, args...)
	return g, err
}

// startGeneratorPiped is startGenerator with the generator's stdout
// piped (the Kafka transport's start line comes that way).
func startGeneratorPiped(cfg tripgen.Config, total uint64, args ...string) (*generator, io.Reader, error) {
	return startGeneratorPipe(cfg, total, true, args...)
}

func startGeneratorPipe(cfg tripgen.Config, total uint64, pipe bool, args ...string) (*generator, io.Reader, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("tripcache: finding storebench's executable for the generator: %w", err)
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	all := append([]string{"server-main", tripgen.MainName, "-config", string(cj), "-total", strconv.FormatUint(total, 10)}, args...)
	g := &generator{cmd: exec.Command(exe, all...), stderr: &tailBuffer{}, exited: make(chan struct{})}
	g.cmd.Stderr = g.stderr
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out io.Reader
	if pipe {
		// An os.Pipe rather than cmd.StdoutPipe: Wait must not close it
		// under a reader that is still reading the start line.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("tripcache: %w", err)
		}
		g.cmd.Stdout = w
		defer w.Close()
		out = r
	}
	if err := g.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("tripcache: starting the generator: %w", err)
	}
	go func() {
		g.err = g.cmd.Wait()
		close(g.exited)
	}()
	return g, out, nil
}

// finish waits for the generator (stopping it first when cut) and
// returns its CPU time and, unless cut, how it failed.
func (g *generator) finish(cut bool) (time.Duration, error) {
	if cut {
		g.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-g.exited
		if !cut {
			return 0, fmt.Errorf("did not exit 10s after the stream ended")
		}
	}
	var cpu time.Duration
	if ps := g.cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	if g.err != nil && !cut {
		return cpu, fmt.Errorf("%v: %s", g.err, g.stderr.String())
	}
	return cpu, nil
}

// socketSource is the seed's default transport: the consumer listens on
// loopback, the generator connects and sends length-prefixed frames.
type socketSource struct {
	ln   net.Listener
	conn net.Conn
	fr   *tripgen.FrameReader
	gen  *generator
}

func startSocket(ctx context.Context, cfg tripgen.Config, total uint64) (*socketSource, int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, fmt.Errorf("tripcache: listening on loopback: %w", err)
	}
	g, err := startGenerator(cfg, total, "-connect", ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, 0, err
	}
	s := &socketSource{ln: ln, gen: g}
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	fail := func(err error) (*socketSource, int64, error) {
		ln.Close()
		g.finish(true)
		return nil, 0, err
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return fail(fmt.Errorf("tripcache: accepting the generator: %w", a.err))
		}
		s.conn = a.c
	case <-g.exited:
		return fail(fmt.Errorf("tripcache: the generator exited before connecting: %v: %s", g.err, g.stderr.String()))
	case <-time.After(30 * time.Second):
		return fail(fmt.Errorf("tripcache: the generator did not connect within 30s"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	ln.Close()
	s.fr = tripgen.NewFrameReader(s.conn)
	s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start, err := s.fr.ReadHello()
	if err != nil {
		s.conn.Close()
		return fail(fmt.Errorf("tripcache: reading the generator's hello: %w", err))
	}
	s.conn.SetReadDeadline(time.Time{})
	// A cancelled step closes the connection, which ends any read.
	context.AfterFunc(ctx, func() { s.conn.Close() })
	return s, start, nil
}

func (s *socketSource) next() ([]byte, error) { return s.fr.Next() }
func (s *socketSource) ordered() bool         { return true }
func (s *socketSource) lanes() int            { return 1 }
func (s *socketSource) stop()                 { s.conn.Close() }
func (s *socketSource) finish(cut bool) (time.Duration, error) {
	s.conn.Close()
	return s.gen.finish(cut)
}
func (s *socketSource) transportCPU() time.Duration { return 0 }

func (s *socketSource) facts() map[string]string {
	return map[string]string{"transport": "TCP socket on loopback, length-prefixed binary frames (" + strconv.Itoa(tripgen.WireSize) + "-byte ticks), generator in its own process"}
}
