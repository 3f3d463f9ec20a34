// Package memcached runs memcached (Debian's memcached, 1.6) for
// storebench: in memory only, bound to 127.0.0.1 over TCP (UDP off), run
// as nobody when we are root (memcached refuses root without -u).
package memcached

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

func init() { server.Register(mcServer{}) }

var packages = server.MustPackages("memcached") // its manifest.txt

// runUser is who memcached drops to when started as root.
const runUser = "nobody"

// defaultMemory is the item memory limit unless the study sets one
// (memcached's own default, 64 MiB, is too small for most data sets).
const defaultMemory = 256 << 20

// startTimeout bounds start-up; memcached is ready in ~10 ms.
const startTimeout = 30 * time.Second

// noDurability is how Settings state the durability mapping, for sync
// and async alike: memcached keeps nothing on disk.
const noDurability = "no persistence: durability not applicable (items live in memory only and are lost on restart)"

type mcServer struct{}

func (mcServer) Name() string  { return "memcached" }
func (mcServer) Title() string { return "memcached" }

// StopSignal is SIGTERM: memcached notices it at its next once-a-second
// clock tick, so a stop takes up to a second.
func (mcServer) StopSignal() syscall.Signal { return syscall.SIGTERM }

func (mcServer) Check() error {
	if _, err := exec.LookPath("memcached"); err != nil {
		return proc.NotInstalled("memcached", "memcached", packages...)
	}
	return nil
}

func (mcServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

func (s mcServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	switch cfg.Durability {
	case kv.Sync, kv.Async, "":
	default:
		return nil, fmt.Errorf("memcached: unknown durability %q (want sync or async)", cfg.Durability)
	}
	bin, err := exec.LookPath("memcached")
	if err != nil {
		return nil, s.Check()
	}
	dir, dataDir, err := instanceDirs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	port, err := cfg.ListenPort()
	if err != nil {
		return nil, fmt.Errorf("memcached: %w", err)
	}
	out, err := proc.Output(ctx, bin, "-V")
	if err != nil {
		return nil, fmt.Errorf("memcached: version: %w", err)
	}
	version := strings.TrimPrefix(proc.FirstLine(out), "memcached ")
	memory := int64(defaultMemory)
	if cfg.MemoryBytes > 0 {
		memory = cfg.MemoryBytes
	}
	memMiB := max(memory>>20, 1)

	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", strconv.FormatInt(memMiB, 10)}
	// As root, started as nobody (memcached refuses root) rather than with
	// -u nobody: a process that switches users itself loses its
	// parent-death signal and would outlive a killed storebench. It has no
	// files, so it runs in / (the instance directory may be private).
	user, wd := "", dir
	if os.Geteuid() == 0 {
		user, wd = runUser, "/"
	}
	logPath := filepath.Join(dir, "memcached.log")
	proc.Logf(cfg.Log, "memcached: starting memcached %s on 127.0.0.1:%d (-m %d) in %s", version, port, memMiB, dir)
	h, err := server.Launch(ctx, cfg, "memcached", proc.Spec{Name: "memcached", Path: bin, Args: args, Dir: wd, LogPath: logPath, User: user, Detach: cfg.Detach},
		func(h *proc.Handle) error { return waitReady(ctx, h, port) })
	if err != nil {
		return nil, err
	}
	durability := cfg.DurabilityOrSync()
	return &server.Instance{
		Name:    s.Name(),
		URI:     fmt.Sprintf("memcached://127.0.0.1:%d", port),
		PID:     h.PID,
		DataDir: dataDir,
		LogPath: logPath,
		Version: version,
		Settings: map[string]string{
			"version":            version,
			"port":               strconv.Itoa(port),
			"durability":         string(durability),
			"durability_mapping": string(durability) + ": " + noDurability,
			server.Persistence:   server.NoPersistence,
			"memory_limit":       fmt.Sprintf("%d MiB (-m %d, %s)", memMiB, memMiB, memorySource(cfg.MemoryBytes)),
			"udp":                "off (-U 0)",
		},
		StopFunc: server.StopFunc(h, syscall.SIGTERM),
	}, nil
}

// instanceDirs makes the instance's data directory under dir, made
// absolute, and returns both. It stays empty (memcached has no files),
// but every instance has one, and the footprint measurement reads it.
func instanceDirs(cfgDir string) (dir, dataDir string, err error) {
	dir, err = filepath.Abs(cfgDir)
	if err != nil {
		return "", "", fmt.Errorf("memcached: %w", err)
	}
	dataDir = filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", "", fmt.Errorf("memcached: creating %s: %w", dataDir, err)
	}
	return dir, dataDir, nil
}

// waitReady waits until the started memcached listens on port and answers
// "version", so that Start hands out only a server that serves; one that
// does not in time is stopped, not left running.
func waitReady(ctx context.Context, h *proc.Handle, port int) error {
	return proc.WaitServingOrStop(ctx, h, port, startTimeout, syscall.SIGTERM, func(ctx context.Context) error {
		reply, err := command(ctx, port, "version")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(reply, "VERSION ") {
			return fmt.Errorf("version answered %q", reply)
		}
		return nil
	})
}

// memorySource says where the memory limit comes from.
func memorySource(asked int64) string {
	if asked > 0 {
		return "the target's cache"
	}
	return "storebench's default"
}

// command sends one text-protocol command line (and an optional data
// block, for storage commands) and returns the reply up to its end: one
// line, or for retrievals and stats every line through END.
func command(ctx context.Context, port int, line string, data ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	defer c.Close()
	// Every read below ends: at the caller's deadline, or at our own when
	// the caller set none (a server that accepts and never answers).
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(10 * time.Second)
	}
	_ = c.SetDeadline(dl)
	req := line + "\r\n"
	for _, b := range data {
		req += b + "\r\n"
	}
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	// Retrievals and stats answer with lines through END; the others
	// with one line.
	multi := false
	for _, p := range []string{"get ", "gets ", "stats"} {
		multi = multi || strings.HasPrefix(line, p)
	}
	r := bufio.NewReader(c)
	var out []string
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("reading the reply to %q: %w", line, err)
		}
		l = strings.TrimRight(l, "\r\n")
		out = append(out, l)
		if !multi || l == "END" || strings.HasSuffix(l, "ERROR") {
			break
		}
	}
	reply := strings.Join(out, "\n")
	if strings.HasSuffix(out[len(out)-1], "ERROR") {
		return "", fmt.Errorf("memcached: %s", reply)
	}
	return reply, nil
}
