package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a tiny TCP server (a stand-in for a real
// one): with PROC_TEST_LISTEN=PORT it waits PROC_TEST_DELAY, listens on
// 127.0.0.1:PORT and answers "hello" to every connection.
func TestMain(m *testing.M) {
	if port := os.Getenv("PROC_TEST_LISTEN"); port != "" {
		os.Exit(listenMain(port))
	}
	if mode := os.Getenv("PROC_TEST_PARENT"); mode != "" {
		os.Exit(parentMain(mode == "detach"))
	}
	os.Exit(m.Run())
}

func listenMain(port string) int {
	if d, err := time.ParseDuration(os.Getenv("PROC_TEST_DELAY")); err == nil {
		time.Sleep(d)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Println("listen:", err)
		return 2
	}
	fmt.Println("listening on", l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		fmt.Fprint(c, "hello\n")
		c.Close()
	}
}

// parentMain starts `sleep 300` with Start from a goroutine whose OS
// thread then exits (a goroutine that ends while locked to its thread
// ends the thread), prints the child's PID and waits to be killed.
func parentMain(detach bool) int {
	// The main thread is never terminated (a goroutine ending while
	// locked to it wedges it instead): keep it for the main goroutine so
	// that the goroutine below runs on a thread that can end.
	runtime.LockOSThread()
	pid := make(chan int)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		h, err := Start(context.Background(), Spec{Name: "sleep", Path: "/bin/sleep", Args: []string{"300"},
			LogPath: filepath.Join(os.TempDir(), "proc-test-parent.log"), Detach: detach})
		if err != nil {
			fmt.Println("start:", err)
			pid <- 0
			return
		}
		pid <- h.PID
	}()
	fmt.Println(<-pid)
	select {}
}

// A child dies with the storebench that started it, even by kill -9, and
// not before: the thread that called Start ending does not kill it (the
// parent-death signal follows the forking thread). A detached one lives on.
func TestChildDiesWithParent(t *testing.T) {
	for _, detach := range []bool{false, true} {
		t.Run(fmt.Sprintf("detach=%v", detach), func(t *testing.T) {
			mode := "tied"
			if detach {
				mode = "detach"
			}
			parent := exec.Command(os.Args[0], "-test.run=^$")
			parent.Env = append(os.Environ(), "PROC_TEST_PARENT="+mode)
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			defer parent.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			child, _ := strconv.Atoi(strings.TrimSpace(line))
			if err != nil || child <= 0 {
				t.Fatalf("parent said %q, %v", line, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-child, syscall.SIGKILL) })
			time.Sleep(300 * time.Millisecond)
			if !Alive(child) {
				t.Fatalf("child %d died while its parent lives (its starting thread ended)", child)
			}
			_ = parent.Process.Kill() // SIGKILL: no handler of ours runs
			_ = parent.Wait()
			gone := waitGone(context.Background(), child, 3*time.Second)
			if detach && gone {
				t.Errorf("detached child %d died with its parent", child)
			}
			if !detach && !gone {
				t.Errorf("child %d outlived its parent killed with -9", child)
			}
		})
	}
}

func tmpLog(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.log")
}

func stopNow(t *testing.T, h *Handle) {
	t.Helper()
	t.Cleanup(func() { _ = Stop(context.Background(), h, syscall.SIGKILL, time.Second) })
}

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	l.Close()
}

func TestStartStop(t *testing.T) {
	h, err := Start(context.Background(), Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, LogPath: tmpLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	stopNow(t, h)
	if !Alive(h.PID) {
		t.Fatalf("pid %d not alive after Start", h.PID)
	}
	if pgid, err := syscall.Getpgid(h.PID); err != nil || pgid != h.PID {
		t.Errorf("pgid = %d, %v; want its own group %d", pgid, err, h.PID)
	}
	t0 := time.Now()
	if err := Stop(context.Background(), h, 0, 5*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("SIGTERM stop took %s", d)
	}
	if Alive(h.PID) || !h.Exited() {
		t.Fatalf("pid %d alive after Stop", h.PID)
	}
	if err := Stop(context.Background(), h, 0, time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartupExitCarriesLogTail(t *testing.T) {
	log := tmpLog(t)
	h, err := Start(context.Background(), Spec{Name: "failer", Path: "sh", Args: []string{"-c", "for i in $(seq 1 20); do echo line$i; done; echo boom >&2; exit 3"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err = WaitReady(context.Background(), h, 10*time.Second, func(context.Context) error { return errors.New("not yet") })
	if err == nil {
		t.Fatal("WaitReady succeeded on a process that exited")
	}
	if time.Since(t0) > 2*time.Second {
		t.Errorf("took %s to notice the exit", time.Since(t0))
	}
	msg := err.Error()
	for _, want := range []string{"failer exited during start-up: exit status 3", "log:", "boom", "line20", "line12"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line11\n") || strings.Contains(msg, "line1\n") {
		t.Errorf("error carries more than %d lines:\n%s", TailLines, msg)
	}
	if err := Stop(context.Background(), h, 0, time.Second); err == nil || !strings.Contains(err.Error(), "already exited") {
		t.Errorf("Stop after a failed exit: %v; want 'had already exited'", err)
	}
}

func TestWaitReadyTimeout(t *testing.T) {
	log := tmpLog(t)
	h, err := Start(context.Background(), Spec{Name: "sleeper", Path: "sh", Args: []string{"-c", "echo starting; exec sleep 60"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	stopNow(t, h)
	probes := 0
	err = WaitReady(context.Background(), h, 300*time.Millisecond, func(context.Context) error { probes++; return errors.New("connection refused") })
	if err == nil {
		t.Fatal("WaitReady succeeded")
	}
	for _, want := range []string{"sleeper did not become ready within 300ms", "connection refused", "starting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// 50 ms polling: about 6 probes in 300 ms, never a single fixed sleep.
	if probes < 3 || probes > 10 {
		t.Errorf("%d probes in 300 ms", probes)
	}
}

func TestWaitReadyPermanent(t *testing.T) {
	h, err := Start(context.Background(), Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, LogPath: tmpLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	stopNow(t, h)
	t0 := time.Now()
	err = WaitReady(context.Background(), h, 10*time.Second, func(context.Context) error { return Permanent(errors.New("access denied")) })
	if err == nil || !strings.Contains(err.Error(), "access denied") || time.Since(t0) > time.Second {
		t.Fatalf("got %v after %s; want an immediate access denied", err, time.Since(t0))
	}
}

func TestWaitReadyTCP(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(context.Background(), Spec{Name: "listener", Path: exe, LogPath: tmpLog(t),
		Env: []string{"PROC_TEST_LISTEN=" + strconv.Itoa(port), "PROC_TEST_DELAY=200ms"}})
	if err != nil {
		t.Fatal(err)
	}
	stopNow(t, h)
	t0 := time.Now()
	probe := func(ctx context.Context) error {
		if err := Listening(h.PID, port); err != nil {
			return err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := c.Read(buf); err != nil || string(buf) != "hello" {
			return fmt.Errorf("read %q, %v", buf, err)
		}
		return nil
	}
	if err := WaitReady(context.Background(), h, 10*time.Second, probe); err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	if d < 200*time.Millisecond || d > 600*time.Millisecond {
		t.Errorf("ready after %s; the listener starts after 200 ms and polls are 50 ms apart", d)
	}
	// Another process's port is not this one's.
	if err := Listening(os.Getpid(), port); err == nil {
		t.Error("Listening says the test process holds the listener's port")
	}
	if err := Stop(context.Background(), h, 0, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestStopKillsStubbornGroup(t *testing.T) {
	log := tmpLog(t)
	// The shell ignores SIGTERM; its child sleep is in the same group and
	// must die with it.
	h, err := Start(context.Background(), Spec{Name: "stubborn", Path: "sh", Args: []string{"-c", `trap "" TERM; echo $$; sleep 60 & echo $!; wait; wait`}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	stopNow(t, h)
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		b, _ := os.ReadFile(log)
		if f := strings.Fields(string(b)); len(f) >= 2 {
			child, _ = strconv.Atoi(f[1])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the shell did not report its child")
	}
	t0 := time.Now()
	err = Stop(context.Background(), h, syscall.SIGTERM, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 300ms after SIGTERM: killed") {
		t.Fatalf("Stop: %v; want a kill", err)
	}
	if time.Since(t0) > 2*time.Second {
		t.Errorf("Stop took %s", time.Since(t0))
	}
	if Alive(h.PID) {
		t.Error("shell alive")
	}
	if !waitGone(context.Background(), child, 2*time.Second) {
		t.Errorf("child %d of the group survived", child)
	}
}

func TestStopPID(t *testing.T) {
	h, err := Start(context.Background(), Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, LogPath: tmpLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	stopNow(t, h)
	st, err := StartTime(h.PID)
	if err != nil || st == 0 {
		t.Fatalf("StartTime: %d, %v", st, err)
	}
	if err := StopPID(context.Background(), h.PID, syscall.SIGINT, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive(h.PID) {
		t.Fatal("alive after StopPID")
	}
	if err := StopPID(context.Background(), h.PID, 0, time.Second); err != nil {
		t.Errorf("StopPID of a dead pid: %v", err)
	}
	if Alive(0) || Alive(-1) {
		t.Error("Alive of a non-pid")
	}
}

func TestRunAsUser(t *testing.T) {
	log := tmpLog(t)
	// The log is opened by us, so the user needs no access to its dir.
	err := Run(context.Background(), Spec{Name: "id", Path: "sh", Args: []string{"-c", "id -u; echo $HOME"}, LogPath: log, User: "nobody"})
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "needs root") {
			t.Fatalf("Run as nobody without root: %v; want 'needs root'", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	if f := strings.Fields(string(b)); len(f) < 2 || f[0] != "65534" || f[1] != "/nonexistent" {
		t.Errorf("ran as %q; want uid 65534 with nobody's HOME", b)
	}
}

func TestRunFailure(t *testing.T) {
	err := Run(context.Background(), Spec{Name: "initdb", Path: "sh", Args: []string{"-c", "echo disk full; exit 1"}, LogPath: tmpLog(t)})
	if err == nil || !strings.Contains(err.Error(), "initdb failed: exit status 1") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := Run(ctx, Spec{Name: "slow", Path: "sleep", Args: []string{"60"}, LogPath: tmpLog(t)}); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("got %v; want interrupted", err)
	}
}

func TestLogTail(t *testing.T) {
	log := tmpLog(t)
	if got := LogTail(log, 3); !strings.Contains(got, "no log") {
		t.Errorf("missing log: %q", got)
	}
	if err := os.WriteFile(log, []byte("a\nb\n\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(log, 3); got != "b\nc\nd" {
		t.Errorf("LogTail = %q", got)
	}
	big := strings.Repeat("x", 100<<10) + "\nlast\n"
	if err := os.WriteFile(log, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(log, 2); got != "last" {
		t.Errorf("LogTail of a big log = %.40q", got)
	}
}

func TestCheckTraversable(t *testing.T) {
	base, err := os.MkdirTemp("", "proc-trav-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	inner := filepath.Join(base, "a", "b")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckTraversable(inner, "nobody"); err != nil {
		t.Errorf("0755 path: %v", err)
	}
	if err := os.Chmod(filepath.Join(base, "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	err = CheckTraversable(inner, "nobody")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(base, "a")+" is mode 0700") {
		t.Errorf("0700 parent: %v", err)
	}
}

func TestSeed(t *testing.T) {
	t.Setenv("STOREBENCH_TEMPLATE_CACHE", t.TempDir())
	key := TemplateKey("test", "1.0", "--opt")
	created := 0
	create := func(dst string) func(context.Context) error {
		return func(context.Context) error {
			created++
			if err := os.MkdirAll(filepath.Join(dst, "sub"), 0o700); err != nil {
				return err
			}
			if err := os.Symlink("sub", filepath.Join(dst, "link")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, "sub", "f"), []byte("data"), 0o600)
		}
	}
	dir := t.TempDir()
	for i, want := range []bool{false, true} {
		dst := filepath.Join(dir, strconv.Itoa(i))
		cached, err := Seed(context.Background(), key, dst, "", nil, create(dst))
		if err != nil {
			t.Fatal(err)
		}
		if cached != want {
			t.Errorf("start %d: cached = %v", i, cached)
		}
		b, err := os.ReadFile(filepath.Join(dst, "link", "f"))
		if err != nil || string(b) != "data" {
			t.Errorf("start %d: %q, %v", i, b, err)
		}
		if st, err := os.Stat(filepath.Join(dst, "sub")); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("start %d: sub mode %v, %v", i, st.Mode(), err)
		}
	}
	if created != 1 {
		t.Errorf("created %d times", created)
	}
	if TemplateKey("test", "1.0", "--opt") == TemplateKey("test", "1.1", "--opt") {
		t.Error("template key ignores the version")
	}
}

// The template cache lives under storebench's home: STOREBENCH_HOME
// moves it, STOREBENCH_TEMPLATE_CACHE still overrides it.
func TestTemplateRootUnderHome(t *testing.T) {
	h := t.TempDir()
	t.Setenv("STOREBENCH_HOME", h)
	t.Setenv("STOREBENCH_TEMPLATE_CACHE", "")
	if got, want := templateRoot(), filepath.Join(h, "templates"); got != want {
		t.Errorf("templateRoot() = %q with STOREBENCH_HOME=%s; want %q", got, h, want)
	}
	t.Setenv("STOREBENCH_TEMPLATE_CACHE", "/elsewhere")
	if got := templateRoot(); got != "/elsewhere" {
		t.Errorf("templateRoot() = %q with STOREBENCH_TEMPLATE_CACHE=/elsewhere", got)
	}
}

// A start that fails on a taken port (Kafka's, Cassandra's JVM) says so
// first in its error, though the line is buried under more than a log
// tail of shutdown messages.
func TestStartupExitPutsItsCauseFirst(t *testing.T) {
	log := tmpLog(t)
	script := `echo "ERROR [KafkaServer id=1] Fatal error during KafkaServer startup. Prepare to shutdown"
echo "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:9092: Address already in use."
for i in $(seq 1 15); do echo "INFO shutting down part $i"; done; exit 1`
	h, err := Start(context.Background(), Spec{Name: "kafka", Path: "sh", Args: []string{"-c", script}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	err = WaitReady(context.Background(), h, 10*time.Second, func(context.Context) error { return errors.New("not yet") })
	want := "kafka exited during start-up: org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:9092: Address already in use.; exit status 1; log:"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error: %v\nwant it to begin %q", err, want)
	}
	if got := LogCause(log); !strings.Contains(got, "Address already in use") {
		t.Errorf("LogCause = %q", got)
	}
	if err := os.WriteFile(log, []byte("java.net.BindException: Address in use\nbye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogCause(log); got != "java.net.BindException: Address in use" {
		t.Errorf("LogCause of a BindException = %q", got)
	}
}
