// Package cassandra runs Apache Cassandra 4.1 as a single node: the jars
// of org.apache.cassandra:cassandra-all from Maven Central (the binary
// tarball is not there) run by Java 17 with a minimal cassandra.yaml of
// our own, everything under the instance directory, probed over the CQL
// native protocol.
package cassandra

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Name is the server's registry name.
const Name = "cassandra"

// Keyspace is created at start-up (SimpleStrategy, replication factor 1)
// and named in the URI.
const Keyspace = "storebench"

// ReadyTimeout bounds start-up (a cold JVM on 2 cores takes ~10 s).
const ReadyTimeout = 120 * time.Second

func init() { server.Register(Server{}) }

// Server starts Cassandra instances.
type Server struct{}

func (Server) Name() string { return Name }

func (Server) Title() string { return "Apache Cassandra " + Version }

// Check returns nil when the jars are installed and a Java 11 or 17
// runtime is there.
func (Server) Check() error {
	if err := installed(); err != nil {
		return err
	}
	_, _, err := javaPath()
	return err
}

// Install fetches the jars (see Install in install.go).
func (Server) Install(ctx context.Context, log io.Writer) error { return Install(ctx, log) }

// Start runs one node and returns once `SELECT release_version FROM
// system.local` answers and keyspace storebench exists.
func (Server) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	if err := installed(); err != nil {
		return nil, err
	}
	j, err := findJVM()
	if err != nil {
		return nil, err
	}
	ic, err := baseConfig(cfg, cfg.MemoryBytes)
	if err != nil {
		return nil, err
	}
	if ic.dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	if err := ic.makeDirs(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if ic.nativePort, err = cfg.ListenPort(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	for ic.storagePort == 0 || ic.storagePort == ic.nativePort {
		if ic.storagePort, err = proc.FreePort(); err != nil {
			return nil, fmt.Errorf("cassandra: %w", err)
		}
	}
	if err := ic.writeConfig(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}

	proc.Logf(cfg.Log, "cassandra: starting %s on 127.0.0.1:%d (heap %d MiB, commitlog_sync %s), log %s",
		Version, ic.nativePort, ic.heapMiB(), commitlogMode(ic.sync), ic.logPath())
	t0 := time.Now()
	h, err := proc.Start(ctx, proc.Spec{
		Name:    "cassandra",
		Path:    j.java,
		Args:    j.args(ic),
		Dir:     ic.dir,
		LogPath: ic.logPath(),
		Detach:  cfg.Detach,
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	defer stopOnPanic(h)
	release, err := ready(ctx, h, ic)
	if err != nil {
		abandon(h)
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	proc.Logf(cfg.Log, "cassandra: %s ready in %v (pid %d)", release, time.Since(t0).Round(time.Millisecond), h.PID)

	return &server.Instance{
		Name:     Name,
		URI:      fmt.Sprintf("cassandra://127.0.0.1:%d/%s", ic.nativePort, Keyspace),
		PID:      h.PID,
		DataDir:  ic.dataDir(),
		LogPath:  ic.logPath(),
		Version:  release,
		Settings: settings(ic, release, j.java, j.major, memoryLocked(ic.logPath())),
		StopFunc: func(ctx context.Context) error {
			// Cassandra drains on SIGTERM (flushes memtables, closes the
			// commit log); it is killed after the stop timeout.
			if err := proc.Stop(ctx, h, syscall.SIGTERM, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("cassandra: %w", err)
			}
			return nil
		},
	}, nil
}

// jvm is the Java runtime and the jars an instance runs on.
type jvm struct {
	java      string
	major     int // the runtime's Java version
	lib, jamm string
}

// findJVM finds the Java runtime and the jamm agent's jar.
func findJVM() (jvm, error) {
	java, major, err := javaPath()
	if err != nil {
		return jvm{}, err
	}
	lib := LibDir()
	jamm, err := jammJar(lib)
	if err != nil {
		return jvm{}, err
	}
	return jvm{java: java, major: major, lib: lib, jamm: jamm}, nil
}

// args is the command line (after java) of the node ic.
func (j jvm) args(ic instanceConfig) []string { return ic.jvmArgs(j.lib, j.jamm) }

// baseConfig is what every node of an instance shares: the durability
// and a heap of heap bytes (the target's cache when cfg sets one).
func baseConfig(cfg server.Config, heap int64) (instanceConfig, error) {
	ic := instanceConfig{heapFromCache: cfg.MemoryBytes > 0}
	var err error
	if ic.sync, err = syncOf(cfg.Durability); err != nil {
		return ic, err
	}
	if ic.heapBytes, err = heapOf(heap); err != nil {
		return ic, err
	}
	return ic, nil
}

// makeDirs creates the node's data and triggers directories.
func (ic instanceConfig) makeDirs() error {
	for _, d := range []string{ic.dataDir(), ic.triggersDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// writeConfig writes the node's cassandra.yaml and logback.xml.
func (ic instanceConfig) writeConfig() error {
	if err := os.WriteFile(ic.yamlPath(), []byte(ic.yaml()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(ic.logback(), []byte(ic.logbackXML()), 0o644)
}

// abandon stops a node whose start failed.
func abandon(h *proc.Handle) { proc.Abandon(h, syscall.SIGTERM, 5*time.Second) }

// stopOnPanic, deferred once the JVM runs, stops it on a panic before
// passing the panic on: the JVM runs in its own process group and
// outlives us, so a panic in the driver during start-up must not orphan
// it.
func stopOnPanic(h *proc.Handle) {
	if r := recover(); r != nil {
		abandon(h)
		panic(r)
	}
}

// ready waits until the single node h answers CQL (its release version
// is the result), then creates the keyspace.
func ready(ctx context.Context, h *proc.Handle, ic instanceConfig) (string, error) {
	var release string
	probe := func(ctx context.Context) error {
		s, err := sessionAt("127.0.0.1", ic.nativePort, "")
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &release)
	}
	// Cheap check first (WaitServing's): no driver session while the
	// JVM boots.
	if err := proc.WaitServing(ctx, h, ic.nativePort, ReadyTimeout, probe); err != nil {
		return "", err
	}
	if err := createKeyspace(ctx, "127.0.0.1", ic.nativePort, 1); err != nil {
		return "", fmt.Errorf("creating keyspace %s: %w; log:\n%s", Keyspace, err, proc.LogTail(ic.logPath(), proc.TailLines))
	}
	return release, nil
}

func heapSource(fromCache bool) string {
	if fromCache {
		return "the target's cache"
	}
	return "storebench's default"
}

func commitlogMode(sync bool) string {
	if sync {
		return "batch"
	}
	return "periodic"
}

// memoryLocked tells from the log whether Cassandra could mlockall its
// memory (it tries at start-up; it can as root or with memlock unlimited,
// as production nodes are set up): then the whole heap is resident.
func memoryLocked(logPath string) bool {
	b, err := os.ReadFile(logPath)
	return err == nil && strings.Contains(string(b), "JNA mlockall successful")
}

func settings(ic instanceConfig, release, java string, javaMajorVersion int, locked bool) map[string]string {
	lock := "no (memory not locked: the heap becomes resident as it is used)"
	if locked {
		lock = "yes (JNA mlockall succeeded: the whole heap is resident from start, as on a production node with memlock unlimited)"
	}
	durability := "sync: commitlog_sync: batch (a write is acknowledged once its commit-log segment is fsynced; concurrent writes share an fsync)"
	if !ic.sync {
		durability = "async: commitlog_sync: periodic, commitlog_sync_period: " + asyncSyncPeriod +
			" (writes are acknowledged before the fsync; a machine crash may lose up to 10 s)"
	}
	window := ""
	if !ic.sync {
		window = "10s" // asyncSyncPeriod
	}
	return map[string]string{
		server.FlushInterval: window,
		"server":             "Apache Cassandra " + release + " (org.apache.cassandra:cassandra-all " + Version + " from Maven Central), single node",
		"durability":         durability,
		"commitlog_sync":     commitlogMode(ic.sync),
		"heap":               strconv.FormatInt(ic.heapMiB(), 10) + " MiB (-Xms = -Xmx, " + heapSource(ic.heapFromCache) + "), G1 GC, no heap pre-touch",
		"caches":             fmt.Sprintf("key_cache_size %d MiB (5%% of the heap), row_cache_size 0 (off)", ic.keyCacheMiB()),
		"mlockall":           lock,
		"jvm":                fmt.Sprintf("Java %d (%s), -javaagent jamm", javaMajorVersion, java),
		"keyspace":           Keyspace + ": SimpleStrategy, replication_factor 1 (ONE = QUORUM = ALL)",
		"topology":           "num_tokens 16, Murmur3Partitioner, SimpleSnitch, auto_snapshot false",
		"ports":              fmt.Sprintf("native %d, storage %d (127.0.0.1)", ic.nativePort, ic.storagePort),
	}
}
