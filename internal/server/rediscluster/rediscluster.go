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

var packages = server.MustPackages(Name) // redis's (its manifest.txt: install=like:redis)

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

// confPath is the node's redis.conf.
func (c nodeConfig) confPath() string { return filepath.Join(c.dir, "redis.conf") }

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
	c, err := newClusterStart(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for i := 1; i <= c.n; i++ {
		if err := c.startNode(ctx, i); err != nil {
			return c.abort(err)
		}
	}
	topo, err := c.form(ctx)
	if err != nil {
		return c.abort(err)
	}
	settings := c.settings(Describe(topo))
	proc.Logf(cfg.Log, "%s: %d nodes of Redis %s ready in %v", Name, c.n, c.version, time.Since(t0).Round(time.Millisecond))
	return c.instance(settings), nil
}

// clusterStart is one start of a cluster: what every node shares, and
// the nodes started so far.
type clusterStart struct {
	cfg                 server.Config
	primaries, replicas int
	n                   int // nodes: each primary with its replicas
	fsync, mapping      string
	bin, cli, version   string
	dir                 string
	port, bus           int
	password            string
	nodes               []*server.Node
}

// newClusterStart reads the options and the version and picks the ports
// and the password.
func newClusterStart(ctx context.Context, cfg server.Config) (*clusterStart, error) {
	if err := (Server{}).Check(); err != nil {
		return nil, err
	}
	c := &clusterStart{cfg: cfg}
	var err error
	if c.primaries, c.replicas, err = Options(cfg.Options); err != nil {
		return nil, err
	}
	c.n = c.primaries * (1 + c.replicas)
	if c.fsync, c.mapping, err = appendfsync(cfg.Durability); err != nil {
		return nil, err
	}
	c.bin, _ = exec.LookPath("redis-server")
	c.cli, _ = exec.LookPath("redis-cli")
	out, err := proc.Output(ctx, c.bin, "--version")
	if err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	c.version = parseVersion(out)
	if c.dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	if c.port, c.bus, err = freePorts(c.n); err != nil {
		return nil, err
	}
	if c.password, err = proc.Password(); err != nil {
		return nil, err
	}
	return c, nil
}

// abort stops the nodes started so far and returns err.
func (c *clusterStart) abort(err error) (*server.Instance, error) {
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = server.StopNodes(sctx, c.nodes, 5*time.Second)
	return nil, err
}

// startNode writes node i's files, starts it and adds it to the nodes
// once it answers.
func (c *clusterStart) startNode(ctx context.Context, i int) error {
	nc := nodeConfig{host: nodeHost(i), port: c.port, bus: c.bus, dir: filepath.Join(c.dir, "node"+strconv.Itoa(i)),
		fsync: c.fsync, memory: c.cfg.MemoryBytes, nodeTimeoutMS: NodeTimeout.Milliseconds()}
	if err := os.MkdirAll(nc.dataDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(nc.confPath(), []byte(nc.config()), 0o644); err != nil {
		return err
	}
	name := "node" + strconv.Itoa(i)
	h, err := c.up(ctx, name, nc, false)
	if err != nil {
		return err
	}
	nd := server.NewNode(name, nc.addr(), nc.dataDir(), h, syscall.SIGTERM,
		func(ctx context.Context) (*proc.Handle, error) { return c.up(ctx, name, nc, true) })
	nd.BeforeStop = func(ctx context.Context) { _ = aofSettled(ctx, nc.addr(), c.password, true) }
	c.nodes = append(c.nodes, nd)
	return nil
}

// up starts the node's process and waits until it answers; joined also
// waits until it is back in a healthy cluster (a restart).
func (c *clusterStart) up(ctx context.Context, name string, nc nodeConfig, joined bool) (*proc.Handle, error) {
	logPath := filepath.Join(nc.dir, "redis.log")
	// requirepass guards every node; masterauth is what a replica
	// presents to its primary (every node may become either).
	stdin := "requirepass " + c.password + "\nmasterauth " + c.password + "\n"
	proc.Logf(c.cfg.Log, "%s: starting %s on %s, log %s", Name, name, nc.addr(), logPath)
	h, err := proc.Start(ctx, proc.Spec{Name: "redis-server " + name, Path: c.bin, Args: []string{nc.confPath(), "-"}, Dir: nc.dir,
		LogPath: logPath, Stdin: stdin, Detach: c.cfg.Detach})
	if err != nil {
		return nil, err
	}
	probe := func(ctx context.Context) error {
		cl := Client(nc.addr(), c.password)
		defer cl.Close()
		if err := cl.Ping(ctx).Err(); err != nil {
			return err
		}
		if joined {
			return healthy(ctx, nc.addr(), c.password, c.n)
		}
		return nil
	}
	if err := proc.WaitReady(ctx, h, readyTimeout, probe); err != nil {
		proc.Abandon(h, syscall.SIGTERM, 5*time.Second)
		return nil, err
	}
	return h, nil
}

// form makes a cluster of the started nodes with redis-cli, waits until
// it is healthy and returns its shape, checked to cover every slot.
func (c *clusterStart) form(ctx context.Context) ([]NodeInfo, error) {
	// redis-cli takes the password from REDISCLI_AUTH: in its environment,
	// which only we (and root) can read, not on its command line.
	args := []string{"--cluster", "create"}
	for _, nd := range c.nodes {
		args = append(args, nd.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(c.replicas), "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, readyTimeout)
	err := proc.Run(cctx, proc.Spec{Name: "redis-cli --cluster create", Path: c.cli, Args: args, Dir: c.dir,
		LogPath: filepath.Join(c.dir, "cluster-create.log"), Env: []string{"REDISCLI_AUTH=" + c.password}})
	cancel()
	if err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, c.nodes, c.password, c.n); err != nil {
		return nil, err
	}
	topo, err := Nodes(ctx, c.nodes[0].Addr, c.password)
	if err != nil {
		return nil, err
	}
	if err := Covered(topo); err != nil {
		return nil, fmt.Errorf("after redis-cli --cluster create: %w", err)
	}
	return topo, nil
}

// settings describe the cluster, each node's role as desc (Describe)
// gives it; they set each node's Role too.
func (c *clusterStart) settings(desc map[string]string) map[string]string {
	primaries, replicas, n, version := c.primaries, c.replicas, c.n, c.version
	names := map[string]string{}
	for _, nd := range c.nodes {
		names[nd.Addr] = nd.Name
	}
	settings := map[string]string{
		"version":              version,
		"server":               fmt.Sprintf("Redis %s (Debian's redis-server), %d nodes on 127.0.0.1..127.0.0.%d, one process each", version, n, n),
		"nodes":                strconv.Itoa(n),
		"primaries":            strconv.Itoa(primaries),
		"replicas":             strconv.Itoa(replicas),
		"topology":             fmt.Sprintf("%d primaries with %d replica(s) each, %d hash slots, formed by redis-cli --cluster create --cluster-replicas %d", primaries, replicas, Slots, replicas),
		"ports":                fmt.Sprintf("client %d, cluster bus %d on every node address", c.port, c.bus),
		"cluster_node_timeout": fmt.Sprintf("%d ms (a primary unreachable this long is failed over to its replica)", NodeTimeout.Milliseconds()),
		"durability":           string(c.cfg.DurabilityOrSync()),
		"appendfsync":          c.fsync,
		"durability_mapping":   c.mapping,
		"replication":          "asynchronous: a primary acknowledges a write before its replica has it, so a failover can lose acknowledged writes (Redis's own caveat; WAIT is not used)",
		"save":                 `"" (RDB snapshots off)`,
		"auth":                 "requirepass and masterauth: a random password generated at each start (on each node's standard input and in the URI only, never printed)",
	}
	for _, nd := range c.nodes {
		settings[nd.Name] = nd.Addr + " " + nameRefs(desc[nd.Addr], names)
		// The role as formed: a failover changes it, which the
		// target's facts after a step with faults record.
		nd.Role = nameRefs(desc[nd.Addr], names) + " (at start)"
	}
	return settings
}

// instance describes the ready cluster.
func (c *clusterStart) instance(settings map[string]string) *server.Instance {
	nodes := c.nodes
	hosts := make([]string, len(nodes))
	for i, nd := range nodes {
		hosts[i] = nd.Addr
	}
	return &server.Instance{
		Name:     Name,
		URI:      fmt.Sprintf("redis-cluster://:%s@%s", c.password, strings.Join(hosts, ",")),
		PID:      nodes[0].PID(),
		DataDir:  c.dir,
		LogPath:  filepath.Join(c.dir, "node1", "redis.log"),
		Version:  c.version,
		Settings: settings,
		Nodes:    nodes,
		StopFunc: func(ctx context.Context) error {
			if err := server.StopNodes(ctx, nodes, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("%s: %w", Name, err)
			}
			return nil
		},
	}
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
