// Package aerospike runs Aerospike Server Community Edition for
// storebench: asd built once from the vendored source (install.go), one
// node whose service, fabric and heartbeat (mesh) ports are free ports on
// 127.0.0.1 (8.x serves info requests on the service port: there is no
// info port left to bind), a configuration written from the study into
// the instance directory (namespace "storebench" on a file device sized
// from the ladder, post-write cache from the target's cache, work and
// mod-lua directories of its own), started in the foreground, probed
// through the Aerospike client, stopped by PID.
//
// Durability: Community Edition has no commit-to-device and no strong
// consistency (both Enterprise-only), so no setting makes a write wait
// for the device before it is acknowledged. Under sync the namespace runs
// the strongest CE setting (the file opened O_DIRECT|O_DSYNC, the write
// buffer flushed every millisecond) and Settings say that writes are
// acknowledged before they are on the device.
package aerospike

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Name of the server, and Namespace the instance serves.
const (
	Name      = "aerospike"
	Namespace = "storebench"
)

// ReadyTimeout bounds start-up ("service ready" after ~2 s).
const ReadyTimeout = 120 * time.Second

const (
	wblock = 8 << 20 // Aerospike's write block: the device file is whole blocks
	// minFile is the smallest namespace file: Aerospike wants at least
	// 128 MiB, and defragmentation room.
	minFile = 1 << 30
	// bytesPerRecord sizes the file from the ladder: a ledger step writes
	// ~3 records of a few hundred bytes per transaction; the file is
	// sparse, so room not used costs no disk.
	bytesPerRecord = 4 << 10
	// defaultPostWriteCache is the post-write cache when the target gives
	// no cache (Aerospike's default is 256 MiB per device).
	defaultPostWriteCache = 64 << 20
)

func init() { server.Register(Server{}) }

// Server is the managed Aerospike.
type Server struct{}

func (Server) Name() string  { return Name }
func (Server) Title() string { return "Aerospike Server CE " + Version + " (built from source)" }

func (Server) Check() error { return installed() }

func (Server) Install(ctx context.Context, log io.Writer) error { return Install(ctx, log) }

// DurabilityNote is what a sync study gets from Community Edition.
const DurabilityNote = "Community Edition cannot fsync per write (commit-to-device and strong consistency are Enterprise-only): " +
	"a write is acknowledged from the write buffer"

// storage is the namespace's device settings for a durability class,
// with the sentence Settings state them in.
func storage(d kv.Durability) (flushMaxMS int, directFiles bool, mapping string, err error) {
	switch d {
	case kv.Sync, "":
		return 1, true, "sync asked, async given: " + DurabilityNote + "; its strongest setting instead: " +
			"direct-files true (the file opened O_DIRECT|O_DSYNC: a flushed write block is on the device when the write returns) " +
			"and flush-max-ms 1 (a partly filled write block is flushed within ~1 ms of a write)", nil
	case kv.Async:
		return 1000, false, "async: direct-files false (write blocks go through the page cache, which the OS flushes), " +
			"flush-max-ms 1000 (Aerospike's default)", nil
	}
	return 0, false, "", fmt.Errorf("aerospike: unknown durability %q (want sync or async)", d)
}

// fileSize is the namespace file's size for a study whose largest ladder
// step is records: whole write blocks, at least minFile.
func fileSize(records int64) int64 {
	n := max(records*bytesPerRecord, minFile)
	return (n + wblock - 1) / wblock * wblock
}

type layout struct {
	dir, work, smd, lua, data, file string
}

func newLayout(dir string) layout {
	work := filepath.Join(dir, "work")
	data := filepath.Join(dir, "data")
	return layout{dir: dir, work: work, smd: filepath.Join(work, "smd"), lua: filepath.Join(work, "usr", "udf", "lua"),
		data: data, file: filepath.Join(data, Namespace+".dat")}
}

type ports struct{ service, fabric, heartbeat int }

// config is the whole aerospike.conf.
func config(l layout, p ports, file, postWriteCache int64, flushMaxMS int, directFiles bool) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by storebench: each start rewrites it.")
	w("service {")
	w("    cluster-name storebench")
	w("    work-directory %s", l.work)
	w("    proto-fd-max 1024")
	w("}")
	w("logging {")
	w("    console {") // standard output: the instance's log
	w("        context any info")
	w("    }")
	w("}")
	w("network {")
	w("    service {")
	w("        address 127.0.0.1")
	w("        port %d", p.service)
	w("    }")
	w("    heartbeat {")
	w("        mode mesh")
	w("        address 127.0.0.1")
	w("        port %d", p.heartbeat)
	w("        interval 150")
	w("        timeout 10")
	w("    }")
	w("    fabric {")
	w("        address 127.0.0.1")
	w("        port %d", p.fabric)
	w("    }")
	w("}")
	w("mod-lua {")
	w("    user-path %s", l.lua)
	w("}")
	w("namespace %s {", Namespace)
	w("    replication-factor 1")
	w("    default-ttl 0")
	w("    index-stage-size 128M")
	w("    max-record-size %d", wblock)
	w("    storage-engine device {")
	w("        file %s", l.file)
	w("        filesize %d", file)
	// A record may take a whole write block (a ledger transaction with
	// a 3 MiB payload): max-record-size and flush-size default to 1 MiB.
	w("        flush-size 8M")
	w("        flush-max-ms %d", flushMaxMS)
	w("        direct-files %t", directFiles)
	w("        post-write-cache %d", postWriteCache)
	w("    }")
	w("}")
	return b.String()
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// Start writes the configuration and starts asd in the foreground.
func (s Server) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	if err := installed(); err != nil {
		return nil, err
	}
	flushMaxMS, directFiles, mapping, err := storage(cfg.Durability)
	if err != nil {
		return nil, err
	}
	if cfg.Durability == "" {
		cfg.Durability = kv.Sync
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("aerospike: %w", err)
	}
	l := newLayout(dir)
	for _, d := range []string{l.smd, l.lua, l.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("aerospike: %w", err)
		}
	}
	ps, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("aerospike: %w", err)
	}
	p := ports{service: ps[0], fabric: ps[1], heartbeat: ps[2]}
	if cfg.Port != 0 {
		p.service = cfg.Port
	}
	size := fileSize(cfg.Records)
	pwc, pwcWhy := int64(defaultPostWriteCache), "storebench's default"
	if cfg.MemoryBytes > 0 {
		// Whole write blocks, at least one.
		pwc, pwcWhy = max(cfg.MemoryBytes/wblock, 1)*wblock, "the target's cache, in whole 8 MiB write blocks"
	}
	confPath := filepath.Join(dir, "aerospike.conf")
	if err := os.WriteFile(confPath, []byte(config(l, p, size, pwc, flushMaxMS, directFiles)), 0o644); err != nil {
		return nil, fmt.Errorf("aerospike: writing %s: %w", confPath, err)
	}
	logPath := filepath.Join(dir, "aerospike.log")
	proc.Logf(cfg.Log, "aerospike: starting asd %s on 127.0.0.1:%d (fabric %d, heartbeat %d), namespace %s on %s (%s), log %s",
		Version, p.service, p.fabric, p.heartbeat, Namespace, l.file, mib(size), logPath)
	t0 := time.Now()
	h, err := proc.Start(ctx, proc.Spec{Name: "asd", Path: Binary(), Args: []string{"--config-file", confPath, "--foreground"},
		Dir: dir, LogPath: logPath, Detach: cfg.Detach})
	if err != nil {
		return nil, fmt.Errorf("aerospike: %w", err)
	}
	probe := func(ctx context.Context) error {
		if err := proc.Listening(h.PID, p.service); err != nil {
			// asd waits for a port another process holds, for ever.
			if line := logLine(logPath, "in use, waiting"); line != "" {
				return proc.Permanent(fmt.Errorf("a port it needs is taken (Address already in use): %s", line))
			}
			return err
		}
		return Ping(ctx, p.service)
	}
	if err := proc.WaitReady(ctx, h, ReadyTimeout, probe); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = proc.Stop(sctx, h, syscall.SIGTERM, 10*time.Second)
		return nil, fmt.Errorf("aerospike: %w", err)
	}
	proc.Logf(cfg.Log, "aerospike: ready in %s (pid %d)", time.Since(t0).Round(time.Millisecond), h.PID)
	return &server.Instance{
		Name: Name, URI: fmt.Sprintf("aerospike://127.0.0.1:%d/%s", p.service, Namespace), PID: h.PID,
		DataDir: l.data, LogPath: logPath, Version: Version,
		Settings: map[string]string{
			"version":            Version + " Community Edition (asd built from the vendored source, " + Binary() + ")",
			"ports":              fmt.Sprintf("service %d, fabric %d, heartbeat (mesh) %d on 127.0.0.1; info on the service port", p.service, p.fabric, p.heartbeat),
			"durability":         durabilityClass(cfg.Durability),
			"durability_mapping": mapping,
			"namespace":          fmt.Sprintf("%s: replication-factor 1, max-record-size 8 MiB, storage-engine device, file %s of %s (sparse, sized from the ladder), flush-size 8 MiB", Namespace, filepath.Base(l.file), mib(size)),
			"post-write-cache":   fmt.Sprintf("%s (%s)", mib(pwc), pwcWhy),
			"auth":               "none (security is Enterprise-only; bound to 127.0.0.1)",
		},
		StopFunc: func(ctx context.Context) error {
			if err := proc.Stop(ctx, h, syscall.SIGTERM, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("aerospike: %w", err)
			}
			return nil
		},
	}, nil
}

// durabilityClass is Settings' "durability", which the report's targets
// table shows and its recommendation ranks by: "async" whatever the
// study asked, since no write is on the device when it is acknowledged.
func durabilityClass(d kv.Durability) string {
	if d == kv.Async {
		return "async"
	}
	return "async (the study asked for sync: " + DurabilityNote + "; flushed within ~1 ms, O_DSYNC)"
}

// Ping connects the client to the node on 127.0.0.1:port and checks that
// it serves the namespace.
func Ping(ctx context.Context, port int) error {
	cp := as.NewClientPolicy()
	cp.Timeout = 2 * time.Second
	cp.FailIfNotConnected = true
	if dl, ok := ctx.Deadline(); ok {
		cp.Timeout = max(min(cp.Timeout, time.Until(dl)), 100*time.Millisecond)
	}
	c, err := as.NewClientWithPolicy(cp, "127.0.0.1", port)
	if err != nil {
		return err
	}
	defer c.Close()
	nodes := c.GetNodes()
	if len(nodes) == 0 {
		return fmt.Errorf("no node")
	}
	info, err := nodes[0].RequestInfo(as.NewInfoPolicy(), "namespaces", "status")
	if err != nil {
		return err
	}
	if info["status"] != "ok" {
		return fmt.Errorf("status %q", info["status"])
	}
	if !strings.Contains(";"+info["namespaces"]+";", ";"+Namespace+";") {
		return fmt.Errorf("namespace %s not served yet (namespaces %q)", Namespace, info["namespaces"])
	}
	return nil
}

// logLine is the last line of the log at path that contains what.
func logLine(path, what string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	last := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, what) {
			last = strings.TrimSpace(l)
		}
	}
	return last
}
