// Package redis runs Redis (Debian's redis-server) for storebench: its own
// redis.conf under the instance directory, AOF persistence whose fsync
// policy follows the study's durability, RDB snapshots off, bound to
// 127.0.0.1.
package redis

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

func init() { server.Register(redisServer{}) }

var packages = server.MustPackages("redis") // its manifest.txt

// startTimeout bounds start-up; Redis is ready in ~0.1 s, but loading a
// large AOF left in the directory can take longer.
const startTimeout = 60 * time.Second

type redisServer struct{}

func (redisServer) Name() string               { return "redis" }
func (redisServer) Title() string              { return "Redis" }
func (redisServer) StopSignal() syscall.Signal { return syscall.SIGTERM }

func (redisServer) Check() error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return proc.NotInstalled("redis-server", "redis", packages...)
	}
	return nil
}

func (redisServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

// AsyncOption is the target option that picks Redis's AOF fsync policy
// under durability async: "no" (the default) or "everysec". Under sync
// it is always "always", whatever the option.
const AsyncOption = "appendfsync"

// appendfsync maps the study's durability (and, under async, the
// target's appendfsync option) onto Redis's AOF fsync policy, with the
// sentence Settings state it in.
func appendfsync(d kv.Durability, opts map[string]string) (policy, mapping string, err error) {
	switch d {
	case kv.Sync, "":
		return "always", "sync: appendonly yes, appendfsync always (the AOF is fsynced before a write is acknowledged)", nil
	case kv.Async:
		switch opts[AsyncOption] {
		case "", "no":
			return "no", "async: appendonly yes, appendfsync no (the OS flushes the AOF when it likes; a crash can lose writes)", nil
		case "everysec":
			return "everysec", "async: appendonly yes, appendfsync everysec (the AOF is fsynced once a second; a power failure can lose the last second's writes)", nil
		}
		return "", "", fmt.Errorf("redis: option %s %q: want no or everysec (under durability async)", AsyncOption, opts[AsyncOption])
	}
	return "", "", fmt.Errorf("redis: unknown durability %q (want sync or async)", d)
}

func (s redisServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	fsync, mapping, err := appendfsync(cfg.Durability, cfg.Options)
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, s.Check()
	}
	dir, dataDir, err := instanceDirs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	port, err := cfg.ListenPort()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	out, err := proc.Output(ctx, bin, "--version")
	if err != nil {
		return nil, fmt.Errorf("redis: version: %w", err)
	}
	version := parseVersion(out)

	maxmemory := "0 (no limit)"
	if cfg.MemoryBytes > 0 {
		maxmemory = fmt.Sprintf("%s (%d bytes), maxmemory-policy noeviction: the data set must fit, "+
			"a write past the limit fails with Redis's OOM error rather than an eviction silently dropping keys "+
			"that reads then verify", mib(cfg.MemoryBytes), cfg.MemoryBytes)
	}
	password, err := cfg.Secret()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte(config(dataDir, port, fsync, cfg.MemoryBytes)), 0o644); err != nil {
		return nil, fmt.Errorf("redis: writing %s: %w", conf, err)
	}
	logPath := filepath.Join(dir, "redis.log")
	proc.Logf(cfg.Log, "redis: starting redis-server %s on 127.0.0.1:%d (appendfsync %s) in %s", version, port, fsync, dir)
	// The password reaches Redis on its standard input ("-": more
	// configuration from stdin), never in redis.conf or on the command
	// line, which other users can read.
	h, err := server.Launch(ctx, cfg, "redis", proc.Spec{Name: "redis-server", Path: bin, Args: []string{conf, "-"}, Dir: dir, LogPath: logPath,
		Stdin: "requirepass " + password + "\n", Detach: cfg.Detach},
		func(h *proc.Handle) error { return waitReady(ctx, h, port, password) })
	if err != nil {
		return nil, err
	}
	return &server.Instance{
		Name:    s.Name(),
		URI:     fmt.Sprintf("redis://:%s@127.0.0.1:%d/0", password, port),
		PID:     h.PID,
		DataDir: dataDir,
		LogPath: logPath,
		Version: version,
		Settings: map[string]string{
			"version":            version,
			"port":               strconv.Itoa(port),
			"durability":         string(cfg.DurabilityOrSync()),
			"appendonly":         "yes",
			"appendfsync":        fsync,
			"durability_mapping": mapping,
			server.FlushInterval: flushInterval(fsync),
			"save":               `"" (RDB snapshots off)`,
			"maxmemory":          maxmemory,
			"auth":               "requirepass: a random password generated at each start (in the URI only, never printed)",
		},
		StopFunc: server.StopFunc(h, syscall.SIGTERM),
	}, nil
}

// instanceDirs makes the instance's data directory (where the append-only
// file goes) under dir, made absolute, and returns both.
func instanceDirs(cfgDir string) (dir, dataDir string, err error) {
	dir, err = filepath.Abs(cfgDir)
	if err != nil {
		return "", "", fmt.Errorf("redis: %w", err)
	}
	dataDir = filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", "", fmt.Errorf("redis: creating the data directory: %w", err)
	}
	return dir, dataDir, nil
}

// waitReady waits until the started redis-server listens on port and
// answers an authenticated PING, so that Start hands out only a server
// that serves; one that does not in time is stopped, not left running.
func waitReady(ctx context.Context, h *proc.Handle, port int, password string) error {
	return proc.WaitServingOrStop(ctx, h, port, startTimeout, syscall.SIGTERM, func(ctx context.Context) error {
		_, err := command(ctx, port, password, "PING")
		return err
	})
}

// config is the whole redis.conf: nothing is inherited from Debian's.
func config(dataDir string, port int, fsync string, memory int64) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by storebench: each start rewrites it.")
	w("bind 127.0.0.1")
	w("port %d", port)
	w("protected-mode no")
	// Foreground: storebench is the parent, waits on it and stops it by PID.
	w("daemonize no")
	w("supervised no")
	w("logfile \"\"") // stdout, which is the instance's log
	w("dir %q", dataDir)
	// No RDB snapshots: a background save in the middle of a benchmark
	// would measure fork and disk, not the workload.
	w("save \"\"")
	w("appendonly yes")
	w("appendfsync %s", fsync)
	if memory > 0 {
		w("maxmemory %d", memory)
		w("maxmemory-policy noeviction")
	}
	return b.String()
}

// parseVersion finds v=7.0.15 in "Redis server v=7.0.15 sha=... ".
func parseVersion(out string) string {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return proc.FirstLine(out)
}

// command sends one command in RESP, after AUTH when password is not
// empty, and returns the reply line; an error reply ("-ERR ...") is an
// error. Enough for a readiness probe and tests, with no client library.
func command(ctx context.Context, port int, password string, args ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	r := bufio.NewReader(c)
	if password != "" {
		if _, err := io.WriteString(c, encode("AUTH", password)); err != nil {
			return "", err
		}
		if _, err := reply(r, "AUTH"); err != nil {
			return "", err
		}
	}
	if _, err := io.WriteString(c, encode(args...)); err != nil {
		return "", err
	}
	return reply(r, args[0])
}

// encode is one command as a RESP array of bulk strings.
func encode(args ...string) string {
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	return req.String()
}

// mib prints a byte count as MiB when it is a whole number of them.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// reply reads one reply: a status line as is ("+OK"), a bulk string as
// its bytes, an array as its elements joined by spaces, an error reply
// ("-ERR ...") as an error.
func reply(r *bufio.Reader, cmd string) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the reply to %s: %w", cmd, err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "-"):
		return "", fmt.Errorf("redis: %s", line[1:])
	case strings.HasPrefix(line, "$"):
		// Bulk string: its length, then the bytes.
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk reply %q", line)
		}
		if n < 0 {
			return "", nil // nil reply
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", fmt.Errorf("reading a bulk reply: %w", err)
		}
		return string(buf[:n]), nil
	case strings.HasPrefix(line, "*"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad array reply %q", line)
		}
		items := make([]string, 0, max(n, 0))
		for i := 0; i < n; i++ {
			item, err := reply(r, cmd)
			if err != nil {
				return "", err
			}
			items = append(items, item)
		}
		return strings.Join(items, " "), nil
	case cmd == "PING" && line != "+PONG":
		return "", fmt.Errorf("PING answered %q", line)
	}
	return line, nil
}

// flushInterval is what appendfsync promises to hold unsynced at most
// ("": nothing on a timer).
func flushInterval(fsync string) string {
	if fsync == "everysec" {
		return "1s"
	}
	return ""
}
