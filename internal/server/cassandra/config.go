package cassandra

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"storebench/internal/kv"
)

// DefaultHeapBytes is the JVM heap when Config.MemoryBytes is 0.
const DefaultHeapBytes = 1 << 30

// minHeapBytes: below this Cassandra does not get through start-up.
const minHeapBytes = 256 << 20

// asyncSyncPeriod is the commit log fsync period of kv.Async.
const asyncSyncPeriod = "10000ms"

// instanceConfig is what the files and the command line of one instance
// are made from.
type instanceConfig struct {
	dir         string // cfg.Dir, absolute
	nativePort  int    // CQL native protocol
	storagePort int    // internode (gossip), bound to 127.0.0.1, unused by a single node
	sync        bool   // kv.Sync: commitlog_sync batch; kv.Async: periodic
	heapBytes   int64
	// heapFromCache: heapBytes is the study target's cache, not the default.
	heapFromCache bool
	// addr is the node's listen and RPC address ("" is 127.0.0.1), seed
	// the address of the cluster's seed node ("" is addr): set for the
	// nodes of a cassandra-cluster (cluster.go).
	addr, seed string
}

func (c instanceConfig) address() string {
	if c.addr == "" {
		return "127.0.0.1"
	}
	return c.addr
}

func (c instanceConfig) seedAddress() string {
	if c.seed == "" {
		return c.address()
	}
	return c.seed
}

// clustered reports whether the node is one of several.
func (c instanceConfig) clustered() bool { return c.addr != "" }

func (c instanceConfig) dataDir() string  { return filepath.Join(c.dir, "data") }
func (c instanceConfig) yamlPath() string { return filepath.Join(c.dir, "cassandra.yaml") }
func (c instanceConfig) logback() string  { return filepath.Join(c.dir, "logback.xml") }
func (c instanceConfig) logPath() string  { return filepath.Join(c.dir, "cassandra.log") }
func (c instanceConfig) heapMiB() int64   { return c.heapBytes >> 20 }

// keyCacheMiB is the key cache: 5% of the heap, Cassandra's own rule
// (whose 100 MiB cap is dropped, so a larger cache: budget grows it too).
func (c instanceConfig) keyCacheMiB() int64 { return max(c.heapMiB()/20, 1) }

// triggersDir is empty but must exist, else every schema change warns.
func (c instanceConfig) triggersDir() string { return filepath.Join(c.dir, "triggers") }

func syncOf(d kv.Durability) (bool, error) {
	switch d {
	case kv.Sync, "":
		return true, nil
	case kv.Async:
		return false, nil
	}
	return false, fmt.Errorf("cassandra: unknown durability %q", d)
}

func heapOf(memoryBytes int64) (int64, error) {
	if memoryBytes == 0 {
		return DefaultHeapBytes, nil
	}
	if memoryBytes < minHeapBytes {
		return 0, fmt.Errorf("cassandra: heap of %d MiB is too small (at least %d MiB)", memoryBytes>>20, minHeapBytes>>20)
	}
	return memoryBytes &^ (1<<20 - 1), nil // whole MiB
}

// commitlogYAML is the durability mapping. Cassandra 4.1's batch mode
// fsyncs the commit log before acknowledging each write (or group of
// concurrent writes) and takes no window setting: the old
// commitlog_sync_batch_window_in_ms is deprecated and ignored, and a
// commitlog_sync_period next to batch is refused.
func (c instanceConfig) commitlogYAML() string {
	if c.sync {
		return "commitlog_sync: batch\n"
	}
	return "commitlog_sync: periodic\ncommitlog_sync_period: " + asyncSyncPeriod + "\n"
}

// yaml renders cassandra.yaml: a single node on 127.0.0.1 with everything
// under cfg.Dir/data. Keys not given keep Cassandra 4.1's defaults.
func (c instanceConfig) yaml() string {
	d := c.dataDir()
	q := strconv.Quote
	var b strings.Builder
	what := "one single-node instance"
	if c.clustered() {
		what = "one node of a cluster on loopback addresses"
	}
	fmt.Fprintf(&b, `# Written by storebench for %s.
cluster_name: storebench
num_tokens: 16
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "%s:%d"
listen_address: %s
rpc_address: %s
storage_port: %d
start_native_transport: true
native_transport_port: %d
auto_bootstrap: false
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
# Benchmark data is disposable: no snapshot on TRUNCATE or DROP, which
# would keep the dropped files on disk and in the measured data size.
auto_snapshot: false
data_file_directories:
  - %s
commitlog_directory: %s
saved_caches_directory: %s
hints_directory: %s
cdc_raw_directory: %s
`, what, c.seedAddress(), c.storagePort, c.address(), c.address(), c.storagePort, c.nativePort,
		q(filepath.Join(d, "data")), q(filepath.Join(d, "commitlog")),
		q(filepath.Join(d, "saved_caches")), q(filepath.Join(d, "hints")),
		q(filepath.Join(d, "cdc_raw")))
	b.WriteString(c.commitlogYAML())
	// The study target's cache budget is the heap; the key cache is a
	// share of it, and the row cache stays off as by default (it holds
	// whole partitions off-heap, and Cassandra advises against it).
	fmt.Fprintf(&b, "key_cache_size: %dMiB\nrow_cache_size: 0MiB\n", c.keyCacheMiB())
	return b.String()
}

// logbackXML sends Cassandra's log to cfg.Dir/cassandra.log, the file the
// JVM's own standard output and error are appended to as well.
func (c instanceConfig) logbackXML() string {
	return `<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>` + xmlEscape(c.logPath()) + `</file>
    <append>true</append>
    <encoder>
      <pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern>
    </encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="INFO">
    <appender-ref ref="FILE"/>
  </root>
</configuration>
`
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// jdkModuleFlags opens the JDK internals Cassandra 4.1 (and its netty,
// chronicle, jamm and caffeine) reach into; Java 17 refuses them
// otherwise. The exports/opens of Cassandra's Java 11 options plus the
// java.base packages Java 17 closed.
var jdkModuleFlags = []string{
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.nio=ALL-UNNAMED",
	"--add-opens", "java.base/java.net=ALL-UNNAMED",
	"--add-opens", "java.base/java.math=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
}

func (c instanceConfig) ringDelayMs() string {
	if c.clustered() {
		return "2000"
	}
	return "100"
}

// jvmArgs is the java command line (after the executable).
func (c instanceConfig) jvmArgs(lib, jamm string) []string {
	heap := strconv.FormatInt(c.heapMiB(), 10) + "m"
	args := []string{
		"-Xms" + heap, "-Xmx" + heap, "-Xss256k",
		"-XX:+UseG1GC", "-XX:+ParallelRefProcEnabled",
		"-XX:+PerfDisableSharedMem", // no hsperfdata mmap writes stalling GC
		"-XX:+CrashOnOutOfMemoryError",
		"-XX:ErrorFile=" + filepath.Join(c.dir, "hs_err_pid%p.log"),
		"-Djava.net.preferIPv4Stack=true",
		"-Djdk.attach.allowAttachSelf=true",
		"-Dio.netty.tryReflectionSetAccessible=true",
	}
	args = append(args, jdkModuleFlags...)
	args = append(args,
		// Without the agent jamm measures objects through Unsafe, which
		// fails on hidden classes: every PREPARE would fail with "can't
		// get field offset on a hidden class".
		"-javaagent:"+jamm,
		"-Dcassandra-foreground=yes",
		"-Dcassandra.config="+fileURL(c.yamlPath()),
		"-Dcassandra.storagedir="+c.dataDir(),
		"-Dcassandra.logdir="+c.dir,
		"-Dcassandra.triggers_dir="+c.triggersDir(),
		"-Dlogback.configurationFile="+fileURL(c.logback()),
		// A lone node: nothing to wait for or to tell. A cluster's node
		// waits a little for gossip to learn the ring and the schema (the
		// nodes start one after another, each once the last is up).
		"-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-Dcassandra.ring_delay_ms="+c.ringDelayMs(),
		"-Dcassandra.shutdown_announce_in_ms=0",
		"-cp", filepath.Join(lib, "*"),
		"org.apache.cassandra.service.CassandraDaemon",
	)
	return args
}

// fileURL is the file: URL of path, escaped: "file://" + a path with a
// space, '%' or '#' in it is not the URL of that file.
func fileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: path}).String()
}
