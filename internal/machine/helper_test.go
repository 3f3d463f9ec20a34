//go:build linux

package machine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The tests' child processes are this test binary run again with
// helperEnv set to a mode (the usual Go helper-process pattern): they
// stand for an engine's worker or a server in the group.
const helperEnv = "STOREBENCH_MACHINE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// helperTimeout ends any helper that is left behind: no child outlives a
// test run by more than this.
const helperTimeout = 60 * time.Second

func runHelper(mode string) int {
	time.AfterFunc(helperTimeout, func() { os.Exit(3) })
	in := bufio.NewReader(os.Stdin)
	waitGo := func() {
		fmt.Println("ready")
		if _, err := in.ReadString('\n'); err != nil {
			os.Exit(0) // the test is gone
		}
	}
	switch mode {
	case "spin":
		// Busy on every CPU it may use until killed.
		for range runtime.GOMAXPROCS(0) {
			go spin()
		}
		fmt.Println("ready")
		select {}
	case "sleep":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, in) // until the test closes stdin or kills it
		return 0
	case "fork":
		// A child of its own (a server's worker), then sleep.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=sleep")
		cmd.Stdin = os.Stdin
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			return 1
		}
		fmt.Println("child", cmd.Process.Pid)
		_ = cmd.Wait()
		return 0
	case "cache":
		return helperCache(os.Getenv("HELPER_FILE"), envInt("HELPER_SIZE"), waitGo)
	case "dwrite":
		return helperDirectWrite(os.Getenv("HELPER_FILE"), envInt("HELPER_BLOCK"), waitGo)
	case "alloc":
		return helperAlloc(envInt("HELPER_SIZE"), waitGo)
	case "own":
		// Make a group as a storebench run does, put the pid HELPER_PID in
		// it, say where it is, and wait to be killed (kill -9 of storebench).
		sh, err := Parse(os.Getenv("HELPER_SHAPE"))
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		g, err := New(sh, os.Getenv("HELPER_RUN"), os.Getenv("HELPER_FILE"))
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if err := g.Add(int(envInt("HELPER_PID"))); err != nil {
			fmt.Println("error", err)
			return 1
		}
		b, _ := json.Marshal(g.Dirs())
		fmt.Printf("dirs %s\n", b)
		select {}
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

var sink atomic.Uint64

func spin() {
	x := uint64(1)
	for {
		for i := 0; i < 1e6; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x)
	}
}

func envInt(k string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(k), 10, 64)
	return n
}

// pattern fills b with the bytes of the file at offset off: each 8-byte
// word is its own offset, so a wrong page read back shows.
func pattern(b []byte, off int64) {
	for i := 0; i+8 <= len(b); i += 8 {
		v := uint64(off + int64(i))
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

// helperCache writes size bytes to path with ordinary buffered writes,
// then reads the file twice and checks every byte, saying "ok" with the
// bytes read.
func helperCache(path string, size int64, waitGo func()) int {
	waitGo()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	const chunk = 1 << 20
	buf := make([]byte, chunk)
	for off := int64(0); off < size; off += chunk {
		pattern(buf, off)
		if _, err := f.WriteAt(buf, off); err != nil {
			fmt.Println("error writing:", err)
			return 1
		}
	}
	want := make([]byte, chunk)
	var read int64
	for pass := range 2 {
		for off := int64(0); off < size; off += chunk {
			if _, err := f.ReadAt(buf, off); err != nil {
				fmt.Println("error reading:", err)
				return 1
			}
			pattern(want, off)
			if !bytes.Equal(buf, want) {
				fmt.Printf("error: pass %d: wrong bytes at %d\n", pass, off)
				return 1
			}
			read += chunk
		}
	}
	_ = f.Close()
	fmt.Println("ok", read)
	return 0
}

// helperDirectWrite writes blocks of block bytes with O_DIRECT (past the
// page cache, so each is a write the disk does at once) over a 64 MiB
// file, round and round, until the test kills it.
func helperDirectWrite(path string, block int64, waitGo func()) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_DIRECT, 0o600)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	const align = 4096
	raw := make([]byte, block+align)
	skip := (align - int(uintptr(unsafe.Pointer(&raw[0]))%align)) % align
	buf := raw[skip : skip+int(block)]
	pattern(buf, 0)
	waitGo()
	const span = 64 << 20
	for off := int64(0); ; off = (off + block) % span {
		if _, err := f.WriteAt(buf, off); err != nil {
			fmt.Println("error writing:", err)
			return 1
		}
	}
}

// child is a helper process started by a test.
type child struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	pid int
}

// startHelper starts the helper mode with extra environment and waits for
// its first line ("ready", or what the mode says first), which it returns.
// The child is killed at the end of the test.
func startHelper(t *testing.T, mode string, env ...string) (*child, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s helper: %v", mode, err)
	}
	c := &child{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), pid: cmd.Process.Pid}
	t.Cleanup(c.kill)
	return c, c.line(10 * time.Second)
}

// line reads the child's next line of output, failing the test after
// timeout.
func (c *child) line(timeout time.Duration) string {
	c.t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.s == "" {
			c.t.Fatalf("helper pid %d: reading its output: %v", c.pid, r.err)
		}
		return r.s
	case <-time.After(timeout):
		c.t.Fatalf("helper pid %d said nothing within %s", c.pid, timeout)
		return ""
	}
}

// kill ends the child (SIGKILL) and reaps it; it is safe to call twice.
func (c *child) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// wait waits at most timeout for the child to exit and returns its error.
func (c *child) wait(timeout time.Duration) error {
	c.t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-done
		c.t.Fatalf("helper pid %d did not finish within %s", c.pid, timeout)
		return nil
	}
}
