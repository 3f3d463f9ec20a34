// Package rediscluster runs a Redis Cluster for storebench: N primaries
// with R replicas each, every node Debian's redis-server with
// cluster-enabled yes, its own directory and nodes.conf, bound to its own
// loopback address 127.0.0.1 … 127.0.0.N·(1+R) on one port, formed with
// `redis-cli --cluster create` (Redis's own tool, nothing home-made) and
// probed until every node says cluster_state:ok.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Name is the registry name of the server (and of its target).
const Name = "redis-cluster"

// Defaults: three primaries (the fewest redis-cli accepts) with one
// replica each, and a node timeout short enough that a failover (a
// primary unreachable for NodeTimeout, then its replica elected) fits a
// test, long enough that a loaded 2-core machine does not fail a primary
// over by mistake.
const (
	DefaultPrimaries = 3
	DefaultReplicas  = 1
	NodeTimeout      = 3000 * time.Millisecond
	maxNodes         = 12
	// readyTimeout bounds each node's start and the cluster's forming.
	readyTimeout = 60 * time.Second
)

var packages = []string{"redis-server", "redis-tools"}

func init() { server.Register(Server{}) }

// Server is the redis-cluster managed server.
type Server struct{}

func (Server) Name() string               { return Name }
func (Server) Title() string              { return "Redis Cluster" }
func (Server) Cluster()                   {}
func (Server) StopSignal() syscall.Signal { return syscall.SIGTERM }

func (Server) Check() error {
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			return proc.NotInstalled(b, Name, packages...)
		}
	}
	return nil
}

func (Server) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

// NodeCount is the cluster's node count (server.NodeCounter): each
// primary with its replicas.
func (Server) NodeCount(opts map[string]string) (int, error) {
	p, r, err := Options(opts)
	return p * (1 + r), err
}

// Options reads the cluster's shape from a study target's options.
func Options(opts map[string]string) (primaries, replicas int, err error) {
	primaries, replicas = DefaultPrimaries, DefaultReplicas
	if v, ok := opts["primaries"]; ok {
		if primaries, err = strconv.Atoi(v); err != nil || primaries < 3 {
			return 0, 0, fmt.Errorf("option primaries: %q: want 3 or more (redis-cli --cluster create needs 3)", v)
		}
	}
	if v, ok := opts["replicas"]; ok {
		if replicas, err = strconv.Atoi(v); err != nil || replicas < 0 {
			return 0, 0, fmt.Errorf("option replicas: %q: want 0 or more", v)
		}
	}
	if n := primaries * (1 + replicas); n > maxNodes {
		return 0, 0, fmt.Errorf("%d primaries with %d replicas each are %d nodes: at most %d", primaries, replicas, n, maxNodes)
	}
	return primaries, replicas, nil
}

func nodeHost(i int) string { return server.NodeAddr(i) }

// freePorts finds two ports (clients, cluster bus) free on every node
// address. The bus port is set (cluster-port) rather than left at port +
// 10000, which can pass 65535 for a kernel-chosen port.
func freePorts(n int) (port, bus int, err error) {
	if port, err = server.FreePortOnNodes(n); err != nil {
		return 0, 0, err
	}
	bus, err = server.FreePortOnNodes(n, port)
	return port, bus, err
}

// appendfsync maps the study's durability onto each node's AOF.
func appendfsync(d kv.Durability) (string, string, error) {
	switch d {
	case kv.Sync, "":
		return "always", "sync: appendonly yes, appendfsync always on every node (a primary fsyncs its AOF before it answers; " +
			"replication to the replica is still asynchronous: see replication)", nil
	case kv.Async:
		return "no", "async: appendonly yes, appendfsync no on every node", nil
	}
	return "", "", fmt.Errorf("%s: unknown durability %q (want sync or async)", Name, d)
}

type nodeConfig struct {
	host          string
	port, bus     int
	dir           string
	fsync         string
	memory        int64
	nodeTimeoutMS int64
}

func (c nodeConfig) dataDir() string { return filepath.Join(c.dir, "data") }
func (c nodeConfig) addr() string    { return net.JoinHostPort(c.host, strconv.Itoa(c.port)) }

// config is a node's whole redis.conf (the password is not in it: it
// reaches redis-server on standard input).
func (c nodeConfig) config() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by storebench: each start rewrites it.")
	w("bind %s", c.host)
	w("port %d", c.port)
	w("protected-mode no")
	w("daemonize no")
	w("supervised no")
	w("logfile \"\"")
	w("dir %q", c.dataDir())
	w("cluster-enabled yes")
	w("cluster-config-file nodes.conf")
	w("cluster-port %d", c.bus)
	// Every node announces its own loopback address: the others reach it
	// there, and clients follow MOVED redirections to it.
	w("cluster-announce-ip %s", c.host)
	w("cluster-node-timeout %d", c.nodeTimeoutMS)
	// A replica may always take over its failed primary, however long
	// since it last heard from it: the test pauses a primary, and a
	// replica refusing to fail over would leave slots unserved.
	w("cluster-replica-validity-factor 0")
	w("save \"\"")
	w("appendonly yes")
	w("appendfsync %s", c.fsync)
	if c.memory > 0 {
		w("maxmemory %d", c.memory)
		w("maxmemory-policy noeviction")
	}
	return b.String()
}

func (Server) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	inst, err := start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return inst, nil
}

func start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	if err := (Server{}).Check(); err != nil {
		return nil, err
	}
	primaries, replicas, err := Options(cfg.Options)
	if err != nil {
		return nil, err
	}
	n := primaries * (1 + replicas)
	fsync, mapping, err := appendfsync(cfg.Durability)
	if err != nil {
		return nil, err
	}
	bin, _ := exec.LookPath("redis-server")
	cli, _ := exec.LookPath("redis-cli")
	out, err := proc.Output(ctx, bin, "--version")
	if err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	version := parseVersion(out)
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	port, bus, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	password, err := proc.Password()
	if err != nil {
		return nil, err
	}
	// requirepass guards every node; masterauth is what a replica
	// presents to its primary (every node may become either).
	stdin := "requirepass " + password + "\nmasterauth " + password + "\n"

	var nodes []*server.Node
	abort := func(err error) (*server.Instance, error) {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = server.StopNodes(sctx, nodes, 5*time.Second)
		return nil, err
	}
	t0 := time.Now()
	for i := 1; i <= n; i++ {
		nc := nodeConfig{host: nodeHost(i), port: port, bus: bus, dir: filepath.Join(dir, "node"+strconv.Itoa(i)),
			fsync: fsync, memory: cfg.MemoryBytes, nodeTimeoutMS: NodeTimeout.Milliseconds()}
		if err := os.MkdirAll(nc.dataDir(), 0o755); err != nil {
			return abort(err)
		}
		conf := filepath.Join(nc.dir, "redis.conf")
		if err := os.WriteFile(conf, []byte(nc.config()), 0o644); err != nil {
			return abort(err)
		}
		name := "node" + strconv.Itoa(i)
		logPath := filepath.Join(nc.dir, "redis.log")
		// up starts the process and waits until it answers; joined also
		// waits until it is back in a healthy cluster (a restart).
		up := func(ctx context.Context, joined bool) (*proc.Handle, error) {
			proc.Logf(cfg.Log, "%s: starting %s on %s, log %s", Name, name, nc.addr(), logPath)
			h, err := proc.Start(ctx, proc.Spec{Name: "redis-server " + name, Path: bin, Args: []string{conf, "-"}, Dir: nc.dir,
				LogPath: logPath, Stdin: stdin, Detach: cfg.Detach})
			if err != nil {
				return nil, err
			}
			probe := func(ctx context.Context) error {
				c := Client(nc.addr(), password)
				defer c.Close()
				if err := c.Ping(ctx).Err(); err != nil {
					return err
				}
				if joined {
					return healthy(ctx, nc.addr(), password, n)
				}
				return nil
			}
			if err := proc.WaitReady(ctx, h, readyTimeout, probe); err != nil {
				_ = proc.Stop(context.Background(), h, syscall.SIGTERM, 5*time.Second)
				return nil, err
			}
			return h, nil
		}
		h, err := up(ctx, false)
		if err != nil {
			return abort(err)
		}
		nd := server.NewNode(name, nc.addr(), nc.dataDir(), h, syscall.SIGTERM,
			func(ctx context.Context) (*proc.Handle, error) { return up(ctx, true) })
		nd.BeforeStop = func(ctx context.Context) { _ = aofSettled(ctx, nc.addr(), password, true) }
		nodes = append(nodes, nd)
	}
	// redis-cli takes the password from REDISCLI_AUTH: in its environment,
	// which only we (and root) can read, not on its command line.
	args := []string{"--cluster", "create"}
	for _, nd := range nodes {
		args = append(args, nd.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, readyTimeout)
	err = proc.Run(cctx, proc.Spec{Name: "redis-cli --cluster create", Path: cli, Args: args, Dir: dir,
		LogPath: filepath.Join(dir, "cluster-create.log"), Env: []string{"REDISCLI_AUTH=" + password}})
	cancel()
	if err != nil {
		return abort(err)
	}
	if err := waitHealthy(ctx, nodes, password, n); err != nil {
		return abort(err)
	}
	topo, err := Nodes(ctx, nodes[0].Addr, password)
	if err != nil {
		return abort(err)
	}
	if err := Covered(topo); err != nil {
		return abort(fmt.Errorf("after redis-cli --cluster create: %w", err))
	}
	desc := Describe(topo)
	names := map[string]string{}
	for _, nd := range nodes {
		names[nd.Addr] = nd.Name
	}
	settings := map[string]string{
		"version":              version,
		"server":               fmt.Sprintf("Redis %s (Debian's redis-server), %d nodes on 127.0.0.1..127.0.0.%d, one process each", version, n, n),
		"nodes":                strconv.Itoa(n),
		"primaries":            strconv.Itoa(primaries),
		"replicas":             strconv.Itoa(replicas),
		"topology":             fmt.Sprintf("%d primaries with %d replica(s) each, %d hash slots, formed by redis-cli --cluster create --cluster-replicas %d", primaries, replicas, Slots, replicas),
		"ports":                fmt.Sprintf("client %d, cluster bus %d on every node address", port, bus),
		"cluster_node_timeout": fmt.Sprintf("%d ms (a primary unreachable this long is failed over to its replica)", NodeTimeout.Milliseconds()),
		"durability":           string(durabilityOrSync(cfg.Durability)),
		"appendfsync":          fsync,
		"durability_mapping":   mapping,
		"replication":          "asynchronous: a primary acknowledges a write before its replica has it, so a failover can lose acknowledged writes (Redis's own caveat; WAIT is not used)",
		"save":                 `"" (RDB snapshots off)`,
		"auth":                 "requirepass and masterauth: a random password generated at each start (on each node's standard input and in the URI only, never printed)",
	}
	for _, nd := range nodes {
		settings[nd.Name] = nd.Addr + " " + nameRefs(desc[nd.Addr], names)
		// The role as formed: a failover changes it, which the
		// target's facts after a step with faults record.
		nd.Role = nameRefs(desc[nd.Addr], names) + " (at start)"
	}
	proc.Logf(cfg.Log, "%s: %d nodes of Redis %s ready in %v", Name, n, version, time.Since(t0).Round(time.Millisecond))
	hosts := make([]string, len(nodes))
	for i, nd := range nodes {
		hosts[i] = nd.Addr
	}
	return &server.Instance{
		Name:     Name,
		URI:      fmt.Sprintf("redis-cluster://:%s@%s", password, strings.Join(hosts, ",")),
		PID:      nodes[0].PID(),
		DataDir:  dir,
		LogPath:  filepath.Join(dir, "node1", "redis.log"),
		Version:  version,
		Settings: settings,
		Nodes:    nodes,
		StopFunc: func(ctx context.Context) error {
			if err := server.StopNodes(ctx, nodes, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("%s: %w", Name, err)
			}
			return nil
		},
	}, nil
}

// nameRefs turns "replica of 127.0.0.2:P" into "replica of node2".
func nameRefs(s string, names map[string]string) string {
	for addr, name := range names {
		s = strings.ReplaceAll(s, "of "+addr, "of "+name)
	}
	return s
}

// healthy is nil once the node at addr says cluster_state:ok, knows all
// n nodes and sees every slot assigned, and, if it is a replica, its link
// to its primary is up (a replica still syncing could not take over).
func healthy(ctx context.Context, addr, password string, n int) error {
	info, err := Info(ctx, addr, password)
	if err != nil {
		return err
	}
	if info["cluster_state"] != "ok" || info["cluster_known_nodes"] != strconv.Itoa(n) || info["cluster_slots_assigned"] != strconv.Itoa(Slots) {
		return fmt.Errorf("%s: cluster_state %s, %s of %d nodes known, %s of %d slots assigned", addr,
			info["cluster_state"], info["cluster_known_nodes"], n, info["cluster_slots_assigned"], Slots)
	}
	c := Client(addr, password)
	defer c.Close()
	repl, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return fmt.Errorf("%s: replica not in sync with its primary yet", addr)
	}
	return aofSettled(ctx, addr, password, false)
}

// aofSettled is nil once the node is not rewriting its AOF: a replica
// writes a new one after each full resync, and until it is done Redis
// ignores SIGTERM ("Writing initial AOF, can't exit"). With wait it
// polls until then or ctx ends.
func aofSettled(ctx context.Context, addr, password string, wait bool) error {
	c := Client(addr, password)
	defer c.Close()
	for {
		info, err := c.Info(ctx, "persistence").Result()
		if err == nil {
			if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
				return nil
			}
			err = fmt.Errorf("%s: rewriting its AOF", addr)
		}
		if !wait {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitHealthy waits until every node is healthy.
func waitHealthy(ctx context.Context, nodes []*server.Node, password string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		var last error
		for _, nd := range nodes {
			if last = healthy(ctx, nd.Addr, password, n); last != nil {
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not form within %v: %w", readyTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func durabilityOrSync(d kv.Durability) kv.Durability {
	if d == "" {
		return kv.Sync
	}
	return d
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

// Topology reads the cluster's shape now from the first node that
// answers: one line per node by address ("primary, slots 0-5460 (5461)",
// "replica of 127.0.0.2:7000").
func Topology(ctx context.Context, addrs []string, password string) (map[string]string, error) {
	var errs []error
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, err := Nodes(ctx, a, password)
		cancel()
		if err == nil {
			return Describe(nodes), nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// SortedAddrs returns m's keys in node order.
func SortedAddrs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return NodeIndex(out[i]) < NodeIndex(out[j]) })
	return out
}
