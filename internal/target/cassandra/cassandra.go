// Package cassandra is the storebench target for Apache Cassandra, through
// the Apache gocql driver (v2).
//
// Layouts, in the URI's keyspace (storebench by default), denormalised
// per query as Cassandra data modelling prescribes:
//
//	ledger  txs_by_addr  (addr blob PRIMARY KEY, prev, genesis, idx bigint, ts bigint, type int, payload blob)
//	        txs_by_chain (genesis blob, idx bigint, addr, prev, ts, type, payload,
//	                      PRIMARY KEY ((genesis), idx)) clustered by idx ascending
//	        balances     (addr blob PRIMARY KEY, amount bigint: the uint64's bits)
//	ycsb    usertable    (y_id text PRIMARY KEY, field0 blob, …) (package
//	        ycsb's layout_cql.go, on conn.CQL)
//	geo     geo_zone, geo_user, geo_blocks (the workload's own, package
//	        geo's layout_cql.go, on conn.CQL)
//
// Both transaction tables hold the whole transaction, so GetTx and Chain
// each read one partition. PutTxs writes the txs_by_chain rows of a chain
// in one UNLOGGED batch: a single-partition batch is applied atomically
// and in isolation, needs no batchlog and is exempt from the batch size
// thresholds. The txs_by_addr rows, one partition each, are written as
// concurrent single-row INSERTs: a multi-partition batch of 100 1 KiB
// transactions would exceed batch_size_fail_threshold (50 KiB), and a
// LOGGED batch would write everything twice through the batchlog. Every
// write is an idempotent upsert, so a PutTxs that failed half-way is
// simply retried.
//
// Statements are prepared by the driver on first use and cached. All
// reads and writes are at consistency ONE; durability is the server's
// commitlog_sync, which Open reads (system_views.settings, Cassandra 4+)
// and which must be batch or group for a sync study.
package cassandra

import (
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the driver release in go.mod (the test checks it).
const moduleVersion = "v2.1.2"

const (
	name            = "cassandra"
	defaultPool     = 16
	defaultKeyspace = "storebench"
	connectTimeout  = 3 * time.Second
	queryTimeout    = 20 * time.Second
	chainPage       = 1000
)

var optionNames = []string{"pool", "consistency", "read_consistency"}

// clusterOptionNames: a managed cassandra-cluster is shaped by nodes and
// replication_factor (read by the server, stated here).
var clusterOptionNames = []string{"pool", "consistency", "read_consistency", "nodes", "replication_factor"}

var identifier = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "Apache Cassandra",
		Version:     "gocql " + moduleVersion,
		OptionNames: optionNames,
		Server:      "cassandra",
		Default:     kv.Async,
		DefaultNote: "Cassandra's default: commitlog_sync periodic, the commit log fsynced every 10 s",
		Schemes:     []string{"cassandra"},
		Provides:    target.Caps{target.KeyValue, target.Secondary, target.ClusteredRanges, target.Shared},
		Open:        targetkit.Closer(Open),
	})
	// The same client on a cluster storebench starts itself: N nodes on
	// 127.0.0.1..127.0.0.N (internal/server/cassandra, cluster.go). An
	// external cluster is named by URI: cassandra://host1:port,host2:port/ks.
	target.Register(target.Info{
		Name:        "cassandra-cluster",
		Title:       "Apache Cassandra cluster",
		Version:     "gocql " + moduleVersion,
		OptionNames: clusterOptionNames,
		Server:      "cassandra-cluster",
		Provides:    target.Caps{target.KeyValue, target.Secondary, target.ClusteredRanges, target.Shared},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := openNamed(o, clusterOptionNames)
			if err != nil {
				return nil, target.OpenError("cassandra-cluster", o.URI, err)
			}
			return s, nil
		},
	})
}

// consistencyOf parses the consistency option (default ONE for one node,
// QUORUM for a cluster: what survives one node down with RF 3).
func consistencyOf(v string, hosts int) (gocql.Consistency, error) {
	if v == "" {
		if hosts > 1 {
			return gocql.Quorum, nil
		}
		return gocql.One, nil
	}
	switch strings.ToUpper(v) {
	case "ONE":
		return gocql.One, nil
	case "TWO":
		return gocql.Two, nil
	case "THREE":
		return gocql.Three, nil
	case "QUORUM":
		return gocql.Quorum, nil
	case "ALL":
		return gocql.All, nil
	case "LOCAL_QUORUM":
		return gocql.LocalQuorum, nil
	case "LOCAL_ONE":
		return gocql.LocalOne, nil
	}
	return 0, fmt.Errorf("option consistency: %q: want ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE or LOCAL_QUORUM", v)
}

// Store is an open session. It offers its session (conn.CQL: the
// workloads' layouts are theirs, e.g. workload/ledger's and
// workload/ycsb's layout_cql.go) and is safe for concurrent use.
type Store struct {
	s        *gocql.Session
	ks       string
	settings map[string]string

	// cons is the consistency of every read and write; hosts how many
	// nodes the URI named.
	cons  gocql.Consistency
	hosts int
	// readCons is the geo layout's read consistency (read_consistency).
	readCons gocql.Consistency
	// retried counts the idempotent requests' server timeouts, each
	// retried (retry.go).
	retried *atomic.Int64
}

// Open connects to o.URI (cassandra://[user:password@]host:port/keyspace),
// creating the keyspace (SimpleStrategy, replication factor 1) if it is
// missing.
func Open(o target.Options) (*Store, error) {
	return targetkit.OpenServer(name, o, func(o target.Options) (*Store, error) { return openNamed(o, optionNames) })
}

// openNamed opens the store; the caller wraps its error once
// (target.OpenError), naming its own target.
func openNamed(o target.Options, known []string) (*Store, error) {
	return open(o, known)
}

func open(o target.Options, known []string) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, known, max(defaultPool, o.Concurrency), "cassandra://host:port[,host:port...]/keyspace")
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	u, err := targetkit.ParseURI(o.URI, "cassandra://")
	if err != nil {
		return nil, err
	}
	ks := strings.Trim(u.Path, "/")
	if ks == "" {
		ks = defaultKeyspace
	}
	if !identifier.MatchString(ks) {
		return nil, fmt.Errorf("keyspace %q: want a CQL identifier (letters, digits, _)", ks)
	}
	// Several hosts (a cluster) are listed comma-separated; the driver
	// learns the rest of the ring from any of them.
	var hosts []string
	for _, hp := range strings.Split(u.Host, ",") {
		host, port := hp, "9042"
		if h, p, err := net.SplitHostPort(hp); err == nil {
			host, port = h, p
		}
		if host == "" {
			host = "127.0.0.1"
		}
		if _, err := strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("bad port %q", port)
		}
		hosts = append(hosts, net.JoinHostPort(host, port))
	}
	cons, err := consistencyOf(sv.Extra["consistency"], len(hosts))
	if err != nil {
		return nil, err
	}
	// The geo layout's reads may ask more replicas than its writes: writes
	// at ONE and reads at ALL see every acknowledged write (R + W > RF)
	// while a node down only holds up the reads.
	readCons := cons
	if v := sv.Extra["read_consistency"]; v != "" {
		if readCons, err = consistencyOf(v, len(hosts)); err != nil {
			return nil, fmt.Errorf("option read_consistency: %w", err)
		}
	}
	c := gocql.NewCluster(hosts...)
	c.Consistency = cons
	c.ConnectTimeout = connectTimeout
	c.Timeout = queryTimeout
	c.NumConns = pool
	// One connection attempt at start-up, so that an unreachable node fails
	// Open at once (MaxRetries counts attempts; gocql v2.1.2 misbehaves
	// with 0).
	c.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1, Interval: time.Second}
	c.PageSize = chainPage
	retried := new(atomic.Int64)
	c.RetryPolicy = timeoutRetry{retried: retried}
	if u.User != nil {
		pw, _ := u.User.Password()
		c.Authenticator = gocql.PasswordAuthenticator{Username: u.User.Username(), Password: pw}
	}
	sess, err := c.CreateSession()
	if err != nil {
		return nil, target.NoAnswer(err, connectTimeout)
	}
	s := &Store{s: sess, ks: ks, cons: cons, readCons: readCons, hosts: len(hosts), retried: retried}
	if err := s.init(isSync, pool, o.URI); err != nil {
		sess.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) init(isSync bool, pool int, uri string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*queryTimeout)
	defer cancel()
	var version string
	if err := s.s.Query(`SELECT release_version FROM system.local`).ScanContext(ctx, &version); err != nil {
		return err
	}
	commitlog := "unknown"
	var v string
	if err := s.s.Query(`SELECT value FROM system_views.settings WHERE name = 'commitlog_sync'`).ScanContext(ctx, &v); err == nil {
		commitlog = v
	}
	durability := "server's commitlog_sync: " + commitlog
	switch {
	case isSync && commitlog == "periodic":
		return fmt.Errorf("the study asks for sync durability but the server has commitlog_sync: periodic: set it to batch (or group)")
	case commitlog == "unknown":
		durability += " (could not be read: system_views needs Cassandra 4)"
	}
	ks := s.ks
	if err := s.s.Query(`CREATE KEYSPACE IF NOT EXISTS ` + ks + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`).ExecContext(ctx); err != nil {
		return fmt.Errorf("creating keyspace %s: %w", ks, err)
	}
	s.settings = map[string]string{
		"server":         redact.Text(uri),
		"server_version": version,
		"client":         "gocql " + moduleVersion + " (statements prepared and cached by the driver)",
		"durability":     durability,
		"consistency":    s.cons.String() + " for reads and writes (geo reads: " + s.readCons.String() + ")",
		"pool":           fmt.Sprintf("%d connections per node (NumConns; each multiplexes many requests)", pool),
		"keyspace":       ks,
		"layout.ledger":  "txs_by_addr (addr PK) and txs_by_chain (partition genesis, clustering idx ASC) both hold the whole transaction; balances (addr PK, amount bigint)",
		"layout.ycsb":    "usertable (y_id text PK, field0..fieldN-1 blob); no scan (token order)",
		"batch": "PutTxs: txs_by_chain rows of a chain in one UNLOGGED single-partition batch (atomic and isolated within the partition, no batchlog, exempt from batch size thresholds); " +
			"txs_by_addr rows as concurrent single-row INSERTs (a multi-partition batch would exceed batch_size_fail_threshold, a LOGGED one doubles the writes through the batchlog); all idempotent upserts",
		"retries":    fmt.Sprintf("a request its workload marks idempotent (the ledger's upserts and reads) is retried on the server's write or read timeout or overload, at most %d times; a step counts them (retried) and its latencies include them", maxRetries),
		"chain_read": fmt.Sprintf("one partition of txs_by_chain in clustering order, pages of %d rows", chainPage),
	}
	return nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// CQLSession implements conn.CQL.
func (s *Store) CQLSession() *gocql.Session { return s.s }

// CQLKeyspace implements conn.CQL.
func (s *Store) CQLKeyspace() string { return s.ks }

// CQLConsistency implements conn.CQLConsistencies: option consistency,
// and read_consistency (the geo layout's reads).
func (s *Store) CQLConsistency() (write, read gocql.Consistency) { return s.cons, s.readCons }

// Close closes the session.
func (s *Store) Close() error {
	s.s.Close()
	return nil
}
