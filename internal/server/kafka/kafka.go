// Package kafka runs Apache Kafka for storebench (the tripcache study's
// Kafka transport): the broker's jars from Maven Central
// (org.apache.kafka:kafka_2.13, pinned), one node in KRaft mode (broker
// and controller in one JVM) on loopback, its storage formatted by
// kafka.tools.StorageTool before the first start, probed over the Kafka
// protocol, stopped by PID.
package kafka

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"

	"storebench/internal/home"
	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/maven"
	"storebench/internal/server/proc"
)

// Version is the Kafka release storebench installs and runs: pinned, as
// a range resolves to a broken 4.4.0.
const Version = "4.1.0"

// Name of the server.
const Name = "kafka"

// ReadyTimeout bounds start-up: a cold JVM on 2 busy cores took ~35 s.
const ReadyTimeout = 180 * time.Second

//go:embed pom.xml
var pomTemplate string

func init() { server.Register(Server{}) }

// Server is the managed Kafka.
type Server struct{}

func (Server) Name() string  { return Name }
func (Server) Title() string { return "Apache Kafka " + Version + " (KRaft)" }

// Home is storebench's own directory (package home).
func Home() string { return home.Dir() }

// InstallDir is <Home>/kafka/<Version>; LibDir holds the jars.
func InstallDir() string { return filepath.Join(Home(), "kafka", Version) }
func LibDir() string     { return filepath.Join(InstallDir(), "lib") }

func installed() error {
	lib := LibDir()
	if !maven.Complete(lib) {
		return fmt.Errorf("Kafka %s is not installed (no complete jar set in %s): run `storebench server install kafka` or scripts/install-kafka.sh", Version, lib)
	}
	if _, err := os.Stat(filepath.Join(lib, "kafka_2.13-"+Version+".jar")); err != nil {
		return fmt.Errorf("Kafka %s install in %s is damaged (%v): remove it and run `storebench server install kafka`", Version, lib, err)
	}
	return nil
}

// javaPath is a Java runtime of version 17 or later (Kafka 4's broker
// needs 17): $JAVA_HOME's, Debian's OpenJDK 17, or `java` on PATH.
func javaPath() (string, error) {
	var seen []string
	for _, c := range maven.JavaCandidates() {
		major, err := maven.JavaMajor(c)
		if err != nil {
			continue
		}
		if major >= 17 {
			return c, nil
		}
		seen = append(seen, fmt.Sprintf("%s is Java %d", c, major))
	}
	if len(seen) == 0 {
		return "", errors.New("no Java runtime found: Kafka needs Java 17 (apt-get install -y openjdk-17-jre-headless, or `storebench server install kafka`)")
	}
	return "", fmt.Errorf("Kafka %s needs Java 17 or later, found: %s", Version, strings.Join(seen, "; "))
}

func (Server) Check() error {
	if _, err := javaPath(); err != nil {
		return err
	}
	return installed()
}

func (Server) Install(ctx context.Context, log io.Writer) error { return Install(ctx, log) }

// Install fetches the broker's jars from Maven Central into LibDir
// (Java 17 and Maven from apt first if missing). Idempotent.
func Install(ctx context.Context, log io.Writer) error {
	return maven.Install(ctx, log, maven.JarSet{
		Name: "kafka", What: "org.apache.kafka:kafka_2.13:" + Version + ", kafka-tools and a log4j binding",
		Dir: InstallDir(), POM: strings.ReplaceAll(pomTemplate, "@KAFKA_VERSION@", Version),
		MainJar: "kafka_2.13-" + Version + ".jar",
		Java: func() error {
			_, err := javaPath()
			return err
		},
		Installed: installed,
	})
}

const log4jXML = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="out" target="SYSTEM_OUT">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="out"/></Root>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="org.apache.kafka.controller" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
  </Loggers>
</Configuration>
`

// properties is the broker's server.properties: one node, broker and
// controller, on two loopback ports.
func properties(dataDir string, port, ctrlPort int, d kv.Durability) string {
	var b strings.Builder
	fmt.Fprintf(&b, "process.roles=broker,controller\nnode.id=1\n")
	fmt.Fprintf(&b, "controller.quorum.voters=1@127.0.0.1:%d\n", ctrlPort)
	fmt.Fprintf(&b, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d\n", port, ctrlPort)
	fmt.Fprintf(&b, "advertised.listeners=PLAINTEXT://127.0.0.1:%d\n", port)
	b.WriteString("controller.listener.names=CONTROLLER\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\ninter.broker.listener.name=PLAINTEXT\n")
	fmt.Fprintf(&b, "log.dirs=%s\n", propValue(dataDir))
	b.WriteString("offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n")
	b.WriteString("share.coordinator.state.topic.replication.factor=1\nshare.coordinator.state.topic.min.isr=1\n")
	b.WriteString("group.initial.rebalance.delay.ms=0\nauto.create.topics.enable=false\ndelete.topic.enable=true\n")
	if d == kv.Sync {
		// Every message fsynced before it is acknowledged.
		b.WriteString("log.flush.interval.messages=1\n")
	}
	return b.String()
}

func durabilityMapping(d kv.Durability) string {
	if d == kv.Sync {
		return "sync: log.flush.interval.messages=1 (each message fsynced by the broker)"
	}
	return "async: Kafka's default, the OS flushes the log (replication is Kafka's durability; this node has one replica)"
}

func heapMiB(memory int64) int64 {
	if memory > 0 {
		return max(memory>>20, 128)
	}
	return 512
}

// Start formats the instance's storage (once) and starts the broker.
func (s Server) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	if err := installed(); err != nil {
		return nil, err
	}
	java, err := javaPath()
	if err != nil {
		return nil, err
	}
	switch cfg.Durability {
	case kv.Sync, kv.Async, "":
	default:
		return nil, fmt.Errorf("kafka: unknown durability %q (want sync or async)", cfg.Durability)
	}
	if cfg.Durability == "" {
		cfg.Durability = kv.Sync
	}
	b, err := prepare(cfg, java)
	if err != nil {
		return nil, err
	}
	if err := b.format(ctx, cfg.Log); err != nil {
		return nil, err
	}
	proc.Logf(cfg.Log, "kafka: starting %s (KRaft, broker+controller) on 127.0.0.1:%d, heap %d MiB, log %s", Version, b.port, b.heap, b.logPath)
	t0 := time.Now()
	h, err := b.run(ctx, cfg.Detach)
	if err != nil {
		return nil, err
	}
	proc.Logf(cfg.Log, "kafka: ready in %s (pid %d)", time.Since(t0).Round(time.Millisecond), h.PID)
	return b.instance(h, cfg.Durability), nil
}

// broker is one instance: its files, ports and JVM.
type broker struct {
	java, dir, dataDir, propsPath, logPath string
	port, ctrl                             int
	heap                                   int64
	jvm                                    []string // the JVM's options, before the main class
}

// prepare makes the instance directory, picks the two ports and writes
// server.properties and log4j2.xml.
func prepare(cfg server.Config, java string) (*broker, error) {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	b := &broker{java: java, dir: dir, dataDir: filepath.Join(dir, "data"), propsPath: filepath.Join(dir, "server.properties"),
		logPath: filepath.Join(dir, "kafka.log"), heap: heapMiB(cfg.MemoryBytes)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	if b.port, err = cfg.ListenPort(); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	for b.ctrl = b.port; b.ctrl == b.port; {
		if b.ctrl, err = proc.FreePort(); err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
	}
	if err := os.WriteFile(b.propsPath, []byte(properties(b.dataDir, b.port, b.ctrl, cfg.Durability)), 0o644); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	logCfg := filepath.Join(dir, "log4j2.xml")
	if err := os.WriteFile(logCfg, []byte(log4jXML), 0o644); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	b.jvm = []string{fmt.Sprintf("-Xms%dm", b.heap), fmt.Sprintf("-Xmx%dm", b.heap), "-XX:+UseG1GC", "-Djava.awt.headless=true",
		// IPv4 sockets: the readiness probe finds the listener in
		// /proc/net/tcp (a dual-stack JVM socket shows in tcp6 only).
		"-Djava.net.preferIPv4Stack=true",
		"-Dlog4j2.configurationFile=" + logCfg, "-cp", filepath.Join(LibDir(), "*")}
	return b, nil
}

// format formats the storage of a fresh node with a new cluster id (a
// node that has its meta.properties keeps it).
func (b *broker) format(ctx context.Context, log io.Writer) error {
	if _, err := os.Stat(filepath.Join(b.dataDir, "meta.properties")); err == nil {
		return nil
	}
	cluster, err := newClusterID()
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	proc.Logf(log, "kafka: formatting %s (cluster %s)", b.dataDir, cluster)
	fctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	err = proc.Run(fctx, proc.Spec{Name: "kafka-storage-format", Path: b.java,
		Args: append(append([]string{}, b.jvm...), "kafka.tools.StorageTool", "format", "-t", cluster, "-c", b.propsPath),
		Dir:  b.dir, LogPath: b.logPath})
	cancel()
	if err != nil {
		// proc.Run quotes the log's tail.
		return fmt.Errorf("kafka: formatting storage: %w", err)
	}
	return nil
}

// addr is the broker's address, what clients bootstrap from.
func (b *broker) addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// run starts the broker and waits until it answers over the Kafka
// protocol, stopping it if it does not.
func (b *broker) run(ctx context.Context, detach bool) (*proc.Handle, error) {
	h, err := proc.Start(ctx, proc.Spec{Name: "kafka", Path: b.java, Args: append(b.jvm, "kafka.Kafka", b.propsPath),
		Dir: b.dir, LogPath: b.logPath, Detach: detach})
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	probe := func(ctx context.Context) error { return Ping(ctx, b.addr()) }
	if err := proc.WaitServing(ctx, h, b.port, ReadyTimeout, probe); err != nil {
		proc.Abandon(h, syscall.SIGTERM, 10*time.Second)
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return h, nil
}

// instance describes the ready broker h.
func (b *broker) instance(h *proc.Handle, d kv.Durability) *server.Instance {
	return &server.Instance{
		Name: Name, URI: "kafka://" + b.addr(), PID: h.PID, DataDir: b.dataDir, LogPath: b.logPath, Version: Version,
		Settings: map[string]string{
			"version":            Version + " (org.apache.kafka:kafka_2.13, KRaft: one node, broker and controller)",
			"port":               strconv.Itoa(b.port),
			"durability":         string(d),
			"durability_mapping": durabilityMapping(d),
			"heap":               fmt.Sprintf("%d MiB", b.heap),
			"java":               b.java,
		},
		StopFunc: func(ctx context.Context) error {
			// A clean shutdown closes the log segments; killed after
			// the stop timeout.
			if err := proc.Stop(ctx, h, syscall.SIGTERM, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("kafka: %w", err)
			}
			return nil
		},
	}
}

// newClusterID is a random cluster id as Kafka makes them: 16 bytes in
// URL-safe base64 that does not start with "-". One in 64 random ids
// does, and StorageTool's argument parser then takes it for an option
// ("argument --cluster-id/-t: expected one argument"): the start failed.
func newClusterID() (string, error) {
	for {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return "", err
		}
		if s := base64.RawURLEncoding.EncodeToString(id[:]); s[0] != '-' {
			return s, nil
		}
	}
}

// Ping asks the broker for its API versions over the Kafka protocol.
func Ping(ctx context.Context, broker string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cl.Ping(pctx)
}

// propValue escapes v for a .properties file read as ISO-8859-1: a
// backslash doubled, a leading space and the line breaks escaped, and
// anything outside printable ASCII as \uXXXX, so that the value read
// back is v.
func propValue(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == ' ' && i == 0:
			b.WriteString(`\ `)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
