package cassandra

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// ClusterName is the registry name of the multi-node server.
const ClusterName = "cassandra-cluster"

// Cluster defaults: three nodes (ccm's usual), a heap small enough that
// three JVMs fit beside the benchmark on a small machine, and a
// replication factor of 3 (capped at the node count) so that QUORUM
// survives one node down.
const (
	DefaultClusterNodes     = 3
	DefaultClusterHeapBytes = 640 << 20
	maxClusterNodes         = 9
)

func init() { server.Register(ClusterServer{}) }

// ClusterServer runs N Cassandra nodes on 127.0.0.1 … 127.0.0.N, each its
// own JVM, directory and cassandra.yaml, every node on the same ports
// (as Cassandra's ccm does): all of 127.0.0.0/8 reaches the loopback
// interface with no alias to set up. The first node is the seed. Options:
// nodes (default 3), replication_factor (default min(3, nodes)).
type ClusterServer struct{}

func (ClusterServer) Name() string { return ClusterName }

func (ClusterServer) Title() string { return "Apache Cassandra " + Version + " cluster" }

// Cluster marks it a server.Cluster.
func (ClusterServer) Cluster() {}

func (ClusterServer) Check() error { return Server{}.Check() }

func (ClusterServer) Install(ctx context.Context, log io.Writer) error { return Install(ctx, log) }

// NodeCount is the cluster's node count (server.NodeCounter).
func (ClusterServer) NodeCount(opts map[string]string) (int, error) {
	n, _, err := ClusterOptions(opts)
	return n, err
}

// ClusterOptions reads the cluster's shape from a study target's options.
func ClusterOptions(opts map[string]string) (nodes, rf int, err error) {
	nodes = DefaultClusterNodes
	if v, ok := opts["nodes"]; ok {
		if nodes, err = strconv.Atoi(v); err != nil || nodes < 1 || nodes > maxClusterNodes {
			return 0, 0, fmt.Errorf("option nodes: %q: want 1..%d", v, maxClusterNodes)
		}
	}
	rf = min(3, nodes)
	if v, ok := opts["replication_factor"]; ok {
		if rf, err = strconv.Atoi(v); err != nil || rf < 1 || rf > nodes {
			return 0, 0, fmt.Errorf("option replication_factor: %q: want 1..%d (the node count)", v, nodes)
		}
	}
	return nodes, rf, nil
}

// nodeAddr is node i's address (i from 1).
func nodeAddr(i int) string { return server.NodeAddr(i) }

// freeOnAll finds a port free on every node address.
func freeOnAll(n int, avoid ...int) (int, error) { return server.FreePortOnNodes(n, avoid...) }

// Start starts the nodes one after another, each once the previous one is
// up and NORMAL in the seed's gossip (two nodes joining at once may race
// for the ring), then creates the keyspace with the replication factor.
func (ClusterServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	c, err := newClusterStart(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			_, _ = c.abort(nil)
			panic(r)
		}
	}()
	t0 := time.Now()
	for i := 1; i <= c.nodes; i++ {
		if err := c.startNode(ctx, i); err != nil {
			return c.abort(err)
		}
	}
	if err := c.waitRing(ctx); err != nil {
		return c.abort(err)
	}
	if err := createKeyspace(ctx, c.base.seed, c.base.nativePort, c.rf); err != nil {
		return c.abort(fmt.Errorf("creating keyspace %s: %w", Keyspace, err))
	}
	topo, err := topology(ctx, c.base.seed, c.base.nativePort)
	if err != nil {
		return c.abort(fmt.Errorf("reading the ring: %w", err))
	}
	proc.Logf(cfg.Log, "cassandra-cluster: %d nodes of %s ready in %v, replication factor %d", c.nodes, c.release, time.Since(t0).Round(time.Millisecond), c.rf)
	return c.instance(topo), nil
}

// clusterStart is one start of a cluster: what every node shares, and
// the nodes started so far. A node's restart (server.Node) reads it
// again: by then it holds every node.
type clusterStart struct {
	cfg       server.Config
	nodes, rf int
	jvm       jvm
	base      instanceConfig // every node's, but for its address and directory
	dir       string
	started   []*server.Node
	release   string // the release the nodes report
}

// newClusterStart reads the options and picks the ports every node
// listens on.
func newClusterStart(cfg server.Config) (*clusterStart, error) {
	if err := installed(); err != nil {
		return nil, err
	}
	c := &clusterStart{cfg: cfg}
	var err error
	if c.nodes, c.rf, err = ClusterOptions(cfg.Options); err != nil {
		return nil, fmt.Errorf("cassandra-cluster: %w", err)
	}
	if c.jvm, err = findJVM(); err != nil {
		return nil, err
	}
	heap := cfg.MemoryBytes
	if heap == 0 {
		heap = DefaultClusterHeapBytes
	}
	if c.base, err = baseConfig(cfg, heap); err != nil {
		return nil, err
	}
	if c.dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	if c.base.nativePort, err = freeOnAll(c.nodes); err != nil {
		return nil, fmt.Errorf("cassandra-cluster: %w", err)
	}
	if c.base.storagePort, err = freeOnAll(c.nodes, c.base.nativePort); err != nil {
		return nil, fmt.Errorf("cassandra-cluster: %w", err)
	}
	c.base.seed = nodeAddr(1)
	return c, nil
}

// abort stops the nodes started so far and returns err, named.
func (c *clusterStart) abort(err error) (*server.Instance, error) {
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = server.StopNodes(sctx, c.started, 5*time.Second)
	return nil, fmt.Errorf("cassandra-cluster: %w", err)
}

// startNode writes node i's files, starts it and adds it to the started
// nodes once it is up.
func (c *clusterStart) startNode(ctx context.Context, i int) error {
	ic := c.base
	ic.addr = nodeAddr(i)
	ic.dir = filepath.Join(c.dir, "node"+strconv.Itoa(i))
	if err := ic.makeDirs(); err != nil {
		return err
	}
	if err := ic.writeConfig(); err != nil {
		return err
	}
	name := fmt.Sprintf("node%d", i)
	start := func(ctx context.Context) (*proc.Handle, error) { return c.runNode(ctx, name, ic) }
	h, err := start(ctx)
	if err != nil {
		return err
	}
	n := server.NewNode(name, net.JoinHostPort(ic.addr, strconv.Itoa(ic.nativePort)), ic.dataDir(), h, syscall.SIGTERM, start)
	c.started = append(c.started, n)
	return nil
}

// runNode starts (or restarts) the node ic and waits until it is up and
// in the ring (nodeUp), stopping it if it does not get there.
func (c *clusterStart) runNode(ctx context.Context, name string, ic instanceConfig) (*proc.Handle, error) {
	proc.Logf(c.cfg.Log, "cassandra-cluster: starting %s on %s:%d (heap %d MiB), log %s", name, ic.addr, ic.nativePort, ic.heapMiB(), ic.logPath())
	h, err := proc.Start(ctx, proc.Spec{Name: "cassandra " + name, Path: c.jvm.java, Args: c.jvm.args(ic), Dir: ic.dir, LogPath: ic.logPath(), Detach: c.cfg.Detach})
	if err != nil {
		return nil, err
	}
	if err := proc.WaitReady(ctx, h, ReadyTimeout, func(ctx context.Context) error { return c.nodeUp(ctx, ic) }); err != nil {
		abandon(h)
		return nil, err
	}
	return h, nil
}

// nodeUp is nil once the node ic answers CQL, is NORMAL in the seed's
// gossip and knows the started nodes, and they know it.
func (c *clusterStart) nodeUp(ctx context.Context, ic instanceConfig) error {
	// Cheap check first: no driver session while the JVM boots.
	// (proc.Listening cannot tell the nodes apart: they share the port
	// on different addresses.)
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(ic.addr, strconv.Itoa(ic.nativePort)))
	if err != nil {
		return err
	}
	conn.Close()
	s, err := sessionAt(ic.addr, ic.nativePort, "")
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &c.release); err != nil {
		return err
	}
	if err := joined(ctx, c.base.seed, ic.nativePort, ic.addr, c.nodes); err != nil {
		return err
	}
	// The node's own view too: it must know the nodes already up (all
	// the others, on a restart) before it coordinates.
	if err := seesRing(ctx, ic.addr, ic.nativePort, otherAddrs(c.started, ic.addr)); err != nil {
		return err
	}
	// And theirs of it: on a restart, every peer must know it is back
	// before it counts as rejoined.
	return seenByPeers(ctx, ic.addr, ic.nativePort, c.started)
}

// waitRing waits until every node knows every other one before the
// cluster is ready: the earlier nodes learn of the later ones by
// gossip, after those are up.
func (c *clusterStart) waitRing(ctx context.Context) error {
	for _, n := range c.started {
		addr := addrOf(n)
		others := otherAddrs(c.started, addr)
		if err := proc.WaitReady(ctx, n.Handle(), ReadyTimeout, func(ctx context.Context) error {
			return seesRing(ctx, addr, c.base.nativePort, others)
		}); err != nil {
			return err
		}
	}
	return nil
}

// otherAddrs are the addresses of nodes but addr.
func otherAddrs(nodes []*server.Node, addr string) []string {
	var others []string
	for _, n := range nodes {
		if a := addrOf(n); a != addr {
			others = append(others, a)
		}
	}
	return others
}

// instance describes the ready cluster, its ring as topo says.
func (c *clusterStart) instance(topo []string) *server.Instance {
	hosts := make([]string, len(c.started))
	for i, n := range c.started {
		hosts[i] = n.Addr
	}
	started := c.started
	return &server.Instance{
		Name:     ClusterName,
		URI:      fmt.Sprintf("cassandra://%s/%s", strings.Join(hosts, ","), Keyspace),
		PID:      started[0].PID(),
		DataDir:  c.dir,
		LogPath:  filepath.Join(c.dir, "node1", "cassandra.log"),
		Version:  c.release,
		Settings: c.settings(topo),
		Nodes:    started,
		StopFunc: func(ctx context.Context) error {
			if err := server.StopNodes(ctx, started, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("cassandra-cluster: %w", err)
			}
			return nil
		},
	}
}

// settings are the single node's, made the cluster's.
func (c *clusterStart) settings(topo []string) map[string]string {
	base, nodes, rf := c.base, c.nodes, c.rf
	settings := settings(base, c.release, c.jvm.java, c.jvm.major, false)
	delete(settings, "mlockall")
	settings["server"] = fmt.Sprintf("Apache Cassandra %s (org.apache.cassandra:cassandra-all %s from Maven Central), %d nodes on 127.0.0.1..127.0.0.%d, one JVM each", c.release, Version, nodes, nodes)
	settings["heap"] = strings.Replace(settings["heap"], " MiB", " MiB per node", 1)
	settings["keyspace"] = fmt.Sprintf("%s: SimpleStrategy, replication_factor %d", Keyspace, rf)
	settings["replication_factor"] = strconv.Itoa(rf)
	settings["nodes"] = strconv.Itoa(nodes)
	settings["topology"] = fmt.Sprintf("%d nodes, num_tokens 16 each, Murmur3Partitioner, SimpleSnitch, seed %s, auto_snapshot false", nodes, base.seed)
	settings["ports"] = fmt.Sprintf("native %d, storage %d on every node address", base.nativePort, base.storagePort)
	for i, line := range topo {
		settings[fmt.Sprintf("node%d", i+1)] = line
	}
	return settings
}

// joined is nil once node addr shows as NORMAL in the seed's gossip and
// the seed's session sees it up (the ring is formed as far as it goes).
func joined(ctx context.Context, seed string, port int, addr string, nodes int) error {
	s, err := sessionAt(seed, port, "")
	if err != nil {
		return err
	}
	defer s.Close()
	// STATUS_WITH_PORT is the state of Cassandra 4 (STATUS is kept only
	// for older peers).
	iter := s.Query("SELECT address, status, status_with_port FROM system_views.gossip_info").IterContext(ctx)
	var a net.IP
	var status, withPort string
	found := ""
	for iter.Scan(&a, &status, &withPort) {
		if a.String() == addr {
			found = withPort
			if found == "" {
				found = status
			}
		}
	}
	if err := iter.Close(); err != nil {
		return err
	}
	if !strings.HasPrefix(found, "NORMAL") {
		return fmt.Errorf("%s is not NORMAL in the seed's gossip yet (status %q)", addr, found)
	}
	return nil
}

// seesRing is nil once the node at addr knows each of others as a member
// of the ring: NORMAL in its own gossip and with its tokens in its
// system.peers_v2 (filled as it adds the peer to its token metadata).
// A node that has just started may answer queries before gossip has told
// it of the others; it then takes itself for the whole ring and, at
// consistency ONE, acknowledges a write for any key with itself as the
// only replica, one that the full ring does not give it. A read at ALL
// on the full ring never asks it: the write is lost.
func seesRing(ctx context.Context, addr string, port int, others []string) error {
	if len(others) == 0 {
		return nil
	}
	s, err := sessionAt(addr, port, "")
	if err != nil {
		return err
	}
	defer s.Close()
	return ringKnows(ctx, s, addr, others)
}

// seenByPeers is nil once every running peer that answers knows addr as
// a member of its ring. A restarted node answers and knows the others
// before they have heard of its return; until they have, a peer that
// coordinates a request takes it for down (or, its status still empty,
// for no member at all). A peer that does not answer (paused) coordinates
// nothing and is not waited for.
func seenByPeers(ctx context.Context, addr string, port int, peers []*server.Node) error {
	for _, p := range peers {
		pa := addrOf(p)
		if pa == addr || p.PID() == 0 {
			continue
		}
		s, err := sessionAt(pa, port, "")
		if err != nil {
			continue
		}
		err = ringKnows(ctx, s, pa, []string{addr})
		s.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// ringKnows is seesRing on an open session to the node at addr.
func ringKnows(ctx context.Context, s *gocql.Session, addr string, others []string) error {
	tokens := map[string]int{}
	var a net.IP
	var ts []string
	iter := s.Query("SELECT peer, tokens FROM system.peers_v2").IterContext(ctx)
	for iter.Scan(&a, &ts) {
		tokens[a.String()] = len(ts)
	}
	if err := iter.Close(); err != nil {
		return err
	}
	status := map[string]string{}
	var st, withPort string
	iter = s.Query("SELECT address, status, status_with_port FROM system_views.gossip_info").IterContext(ctx)
	for iter.Scan(&a, &st, &withPort) {
		if withPort == "" {
			withPort = st
		}
		status[a.String()] = withPort
	}
	if err := iter.Close(); err != nil {
		return err
	}
	for _, o := range others {
		if tokens[o] == 0 || !strings.HasPrefix(status[o], "NORMAL") {
			return fmt.Errorf("%s does not see %s in the ring yet (tokens known: %d, its status there %q)", addr, o, tokens[o], status[o])
		}
	}
	return nil
}

// addrOf is a node's address without its port.
func addrOf(n *server.Node) string {
	h, _, err := net.SplitHostPort(n.Addr)
	if err != nil {
		return n.Addr
	}
	return h
}

// sessionAt connects to the node at addr (keyspace may be empty).
func sessionAt(addr string, port int, keyspace string) (*gocql.Session, error) {
	c := gocql.NewCluster(addr)
	c.Port = port
	c.Keyspace = keyspace
	c.Consistency = gocql.One
	c.ConnectTimeout = 2 * time.Second
	c.Timeout = 10 * time.Second
	c.NumConns = 1
	c.DisableInitialHostLookup = true
	// One connection attempt per probe. MaxRetries is the number of
	// attempts: gocql v2.1.2 puts a nil connection in its pool (and panics
	// on the first query) when it is 0.
	c.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1, Interval: time.Second}
	return c.CreateSession()
}

// createKeyspace creates the keyspace through the node at addr with a
// replication factor of rf.
func createKeyspace(ctx context.Context, addr string, port, rf int) error {
	s, err := sessionAt(addr, port, "")
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Query(fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", Keyspace, rf)).ExecContext(ctx)
}

// topology returns one line per node (by address): its tokens and the
// share of the ring whose primary replica it is.
func topology(ctx context.Context, seed string, port int) ([]string, error) {
	s, err := sessionAt(seed, port, "")
	if err != nil {
		return nil, err
	}
	defer s.Close()
	owner := map[string][]string{}
	var addr net.IP
	var tokens []string
	if err := s.Query("SELECT listen_address, tokens FROM system.local").ScanContext(ctx, &addr, &tokens); err != nil {
		return nil, err
	}
	owner[addr.String()] = tokens
	iter := s.Query("SELECT peer, tokens FROM system.peers_v2").IterContext(ctx)
	for iter.Scan(&addr, &tokens) {
		owner[addr.String()] = append([]string(nil), tokens...)
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	type tok struct {
		v    *big.Int
		node string
	}
	var ring []tok
	for n, ts := range owner {
		for _, t := range ts {
			v, ok := new(big.Int).SetString(t, 10)
			if !ok {
				return nil, fmt.Errorf("token %q of %s", t, n)
			}
			ring = append(ring, tok{v, n})
		}
	}
	sort.Slice(ring, func(i, j int) bool { return ring[i].v.Cmp(ring[j].v) < 0 })
	// Murmur3: a node owns (previous token, its token]; the first range
	// wraps around 2^64.
	full := new(big.Float).SetInt(new(big.Int).Lsh(big.NewInt(1), 64))
	share := map[string]*big.Int{}
	for i, t := range ring {
		prev := ring[(i+len(ring)-1)%len(ring)].v
		d := new(big.Int).Sub(t.v, prev)
		if i == 0 {
			d.Add(d, new(big.Int).Lsh(big.NewInt(1), 64))
		}
		if share[t.node] == nil {
			share[t.node] = new(big.Int)
		}
		share[t.node].Add(share[t.node], d)
	}
	var names []string
	for n := range owner {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		f, _ := new(big.Float).Quo(new(big.Float).SetInt(share[n]), full).Float64()
		out = append(out, fmt.Sprintf("%s: %d tokens, primary owner of %.1f%% of the ring", n, len(owner[n]), 100*f))
	}
	return out, nil
}
