// Package server manages the servers storebench installs, starts,
// measures and stops itself: each runs as a foreground child process with
// its data under a directory of ours, bound to 127.0.0.1 on a free port,
// probed for readiness over its own protocol (never a fixed sleep), and
// stopped by PID with a clean shutdown. One package per server
// (internal/server/<name>) registers itself here.
package server

import (
	"context"
	"fmt"
	"io"
	"sort"
	"syscall"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server/proc"
)

// Config starts one instance.
type Config struct {
	// Dir holds everything of the instance: data, configuration, log.
	// It is created if missing; the server's data goes under Dir/data.
	Dir string
	// Port to listen on (127.0.0.1); 0 picks a free one.
	Port int
	// Password, when set, is the one the server's URI carries (a restart
	// on the same data keeps its URI, so its clients reconnect); empty, a
	// fresh random one (proc.Password). Servers that have none ignore it.
	Password string
	// Durability maps onto the server's own setting (Redis appendfsync,
	// PostgreSQL synchronous_commit, InnoDB flush_log_at_trx_commit,
	// Cassandra commitlog_sync...), stated in Instance.Settings.
	Durability kv.Durability
	// MemoryBytes sizes the server's own cache (a study target's
	// `cache:`): PostgreSQL shared_buffers, MariaDB
	// innodb_buffer_pool_size, Redis maxmemory, memcached -m, Cassandra's
	// heap (and key cache); 0: the server package's default. Settings
	// state the value used.
	MemoryBytes int64
	// Options are the study target's options; a server reads the ones
	// that shape it (the HTTP servers' page_bytes) and ignores the rest.
	Options map[string]string
	// Detach lets the server outlive the storebench process that starts
	// it (`storebench server start`). Otherwise it is killed when that
	// process dies, even by kill -9 (see proc.StartTied).
	Detach bool
	// Log receives progress lines for the user (may be nil).
	Log io.Writer
}

// Instance is a running server.
type Instance struct {
	Name string
	// URI is how targets reach it (it may carry credentials; print it
	// with redact.Text).
	URI string
	// PID is the server process, the root of the tree whose RSS and CPU
	// are measured.
	PID int
	// DataDir holds its data files: page cache and disk are measured here.
	DataDir string
	// LogPath is the server's own log.
	LogPath string
	Version string
	// Settings are what matters to read the numbers (durability mapping,
	// memory, version...).
	Settings map[string]string
	// StopFunc shuts the server down cleanly, killing it if it does not
	// stop in time. Set by the server package.
	StopFunc func(ctx context.Context) error
	// Nodes are a cluster's processes (see cluster.go), nil for a single
	// server.
	Nodes []*Node
}

// Persistence is the Settings key of a server that keeps nothing across
// a restart (value NoPersistence: memcached); absent, it keeps its data.
const (
	Persistence   = "persistence"
	NoPersistence = "none"
)

// Stop shuts the instance down.
func (i *Instance) Stop(ctx context.Context) error {
	if i == nil || i.StopFunc == nil {
		return nil
	}
	return i.StopFunc(ctx)
}

// Server is one kind of server.
type Server interface {
	Name() string
	Title() string
	// Check returns nil when the server can be started on this machine,
	// or an error naming what is missing and how to install it
	// (`storebench server install NAME`).
	Check() error
	// Install installs it (apt, Maven, ...) idempotently, writing
	// progress to log.
	Install(ctx context.Context, log io.Writer) error
	// Start starts an instance and returns once it answers over its own
	// protocol. A server that fails to start yields one clear error with
	// the tail of its log.
	Start(ctx context.Context, cfg Config) (*Instance, error)
}

var registry = map[string]Server{}

// Register adds a server; called from its package's init.
func Register(s Server) {
	if _, dup := registry[s.Name()]; dup {
		panic("server registered twice: " + s.Name())
	}
	registry[s.Name()] = s
}

// Lookup finds a server by name.
func Lookup(name string) (Server, error) {
	s, ok := registry[name]
	if !ok {
		var names []string
		for _, s := range All() {
			names = append(names, s.Name())
		}
		return nil, fmt.Errorf("unknown server %q (known: %v)", name, names)
	}
	return s, nil
}

// All returns the servers sorted by name.
func All() []Server {
	out := make([]Server, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Mains are servers that storebench runs in a process of its own binary
// (FerretDB is embedded as a Go package): `storebench server-main NAME
// ARGS...` calls the registered function, which serves until killed.
var mains = map[string]func(args []string) int{}

// RegisterMain registers an in-process server main.
func RegisterMain(name string, fn func(args []string) int) { mains[name] = fn }

// Main returns the in-process main of a server.
func Main(name string) (func(args []string) int, bool) {
	fn, ok := mains[name]
	return fn, ok
}

// DefaultStopTimeout is how long a clean shutdown may take before kill.
const DefaultStopTimeout = 30 * time.Second

// Cluster is the optional mark of a server whose instance is several
// processes (Instance.Nodes, see cluster.go): a fault takes one of its
// nodes, never the whole as a single server.
type Cluster interface {
	Server
	Cluster()
}

// NodeCounter is a Cluster whose node count its study target's options
// give before it starts (its nodes counted from 1 by fault actions).
type NodeCounter interface {
	NodeCount(opts map[string]string) (int, error)
}

// NodeCount is how many nodes server name runs with the target options
// opts: 1 for a single server, 0 when not known before it starts (or
// the options are wrong: its start says so).
func NodeCount(name string, opts map[string]string) int {
	switch s := registry[name].(type) {
	case NodeCounter:
		if n, err := s.NodeCount(opts); err == nil {
			return n
		}
		return 0
	case Cluster, nil:
		return 0
	}
	return 1
}

// IsCluster says whether server name is a registered Cluster.
func IsCluster(name string) bool {
	_, ok := registry[name].(Cluster)
	return ok
}

// Secret is the password a server started with cfg uses: cfg.Password,
// else a fresh random one.
func (cfg Config) Secret() (string, error) {
	if cfg.Password != "" {
		return cfg.Password, nil
	}
	return proc.Password()
}

// DurabilityOrSync is cfg.Durability, kv.Sync when it is empty (what
// every server maps the empty one onto).
func (cfg Config) DurabilityOrSync() kv.Durability {
	if cfg.Durability == "" {
		return kv.Sync
	}
	return cfg.Durability
}

// ListenPort is the port an instance started with cfg listens on:
// cfg.Port, or a free one (proc.FreePort) when it is 0.
func (cfg Config) ListenPort() (int, error) {
	if cfg.Port != 0 {
		return cfg.Port, nil
	}
	return proc.FreePort()
}

// FlushInterval is the Settings key of the longest a server promises to
// hold an acknowledged write before it fsyncs it, under a durability
// that flushes on a timer (a Go duration: Redis appendfsync everysec 1s,
// Cassandra's periodic commit log 10s, PostgreSQL synchronous_commit=off
// 3 x wal_writer_delay, MariaDB innodb_flush_log_at_trx_commit=2 1s).
// Absent: no such promise (every write fsynced, or none on a timer).
const FlushInterval = "flush_interval"

// StopFunc is an Instance's StopFunc for the server process h: sig, then
// SIGKILL to its group after DefaultStopTimeout.
func StopFunc(h *proc.Handle, sig syscall.Signal) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		return proc.Stop(ctx, h, sig, DefaultStopTimeout)
	}
}

// Launch starts the process spec of the server name (the caller has
// logged its start line), waits with ready until it serves (ready stops
// it if it does not) and logs how long that took.
func Launch(ctx context.Context, cfg Config, name string, spec proc.Spec, ready func(h *proc.Handle) error) (*proc.Handle, error) {
	t0 := time.Now()
	h, err := proc.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := ready(h); err != nil {
		return nil, err
	}
	proc.Logf(cfg.Log, "%s: ready in %s (pid %d)", name, time.Since(t0).Round(time.Millisecond), h.PID)
	return h, nil
}
