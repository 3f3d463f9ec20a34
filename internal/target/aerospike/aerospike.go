// Package aerospike is the storebench target for Aerospike, through the
// official Go client.
//
// It runs only on a server named by URI,
// aerospike://[user:password@]host:port/namespace: no package ships
// Aerospike's server, so storebench starts none (it once built Community
// Edition 8.1.2.0 from a source tarball and ran it; it no longer does).
// A study that names the target without a URI is refused before anything
// runs.
//
// Durability is the namespace's: a client cannot ask for an fsync. Only a
// strong-consistency namespace with commit-to-device (Enterprise-only)
// has each write on the device when it is acknowledged; on any other the
// study's sync class is not refused (Community Edition has no better
// setting) but stated as what it is: async, with the namespace's flush
// settings.
//
// Layouts, in the namespace of the URI:
//
//	ledger  set txs       key address         bins prev, genesis, idx, ts, type, payload
//	        set chain     key genesis|idx     bin  addr
//	        set balances  key address         bin  amount (int, the uint64's bits)
//	ycsb    set usertable key the record key  bins field0 … field<n-1>
//
// Aerospike has no ordered scan, so a chain is a record per (genesis,
// index) whose key is the genesis, '|' and the index (8 bytes, big
// endian); Chain batch-reads indexes 0, 1, 2 … in windows until a miss,
// then batch-reads the transactions. PutTxs is one batch write of both
// sets: each record is atomic, the batch as a whole is not (multi-record
// transactions need a strong-consistency namespace).
package aerospike

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the client release in go.mod (the test checks it).
const moduleVersion = "v8.5.0"

const (
	name             = "aerospike"
	defaultPool      = 16
	defaultNamespace = "test"
	openTimeout      = 4 * time.Second
	opTimeout        = 10 * time.Second
	uriForm          = "aerospike://host:port/namespace"
)

var optionNames = []string{"pool"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "Aerospike",
		Version:     "aerospike-client-go " + moduleVersion,
		OptionNames: optionNames,
		NoServer:    "no package ships its server",
		URIForm:     uriForm,
		Default:     kv.Async,
		DefaultNote: "Aerospike's defaults: flush-max-ms 1000, direct-files false (a write is acknowledged from the write buffer)",
		Schemes:     []string{"aerospike"},
		Provides:    target.Caps{target.KeyValue, target.Secondary},
		Open:        targetkit.Closer(Open),
	})
}

// Store is an open Aerospike client. It offers its client (conn.Aerospike:
// the ledger layout is workload/ledger's layout_aerospike.go), implements
// ycsb.DB (without Scanner) and is safe for concurrent use.
//
// The Aerospike client takes no context: every operation checks the
// caller's before each round trip, and a round trip is bounded by the
// policies' TotalTimeout (opTimeout).
type Store struct {
	c        *as.Client
	ns       string
	settings map[string]string

	read       *as.BasePolicy
	write      *as.WritePolicy
	batch      *as.BatchPolicy
	batchWrite *as.BatchWritePolicy
}

// location is what a URI says: where, who, and which namespace.
type location struct {
	host      string
	port      int
	user      string
	password  string
	namespace string
}

func parseURI(uri string) (location, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return location{}, err
	}
	if u.Scheme != "aerospike" {
		return location{}, fmt.Errorf("scheme %q: want aerospike://", u.Scheme)
	}
	l := location{host: u.Hostname(), port: 3000, namespace: strings.Trim(u.Path, "/")}
	if l.host == "" {
		l.host = "127.0.0.1"
	}
	if p := u.Port(); p != "" {
		if l.port, err = strconv.Atoi(p); err != nil || l.port < 1 || l.port > 65535 {
			return location{}, fmt.Errorf("bad port %q", p)
		}
	}
	if l.namespace == "" {
		l.namespace = defaultNamespace
	}
	if strings.Contains(l.namespace, "/") {
		return location{}, fmt.Errorf("namespace %q: want "+uriForm, l.namespace)
	}
	if u.User != nil {
		l.user = u.User.Username()
		l.password, _ = u.User.Password()
	}
	return l, nil
}

// Open connects to o.URI (aerospike://[user:password@]host:port/namespace;
// namespace "test" by default). The client connects at once and fails
// within ClientPolicy.Timeout.
func Open(o target.Options) (*Store, error) { return targetkit.OpenServer(name, o, open) }

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), uriForm)
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	loc, err := parseURI(o.URI)
	if err != nil {
		return nil, err
	}
	cp := as.NewClientPolicy()
	cp.Timeout = openTimeout
	cp.LoginTimeout = openTimeout
	cp.User, cp.Password = loc.user, loc.password
	cp.ConnectionQueueSize = pool
	cp.FailIfNotConnected = true
	c, aerr := as.NewClientWithPolicy(cp, loc.host, loc.port)
	if aerr != nil {
		return nil, target.NoAnswer(aerr, openTimeout)
	}
	s := &Store{c: c, ns: loc.namespace}
	s.read = as.NewPolicy()
	s.read.TotalTimeout = opTimeout
	s.write = as.NewWritePolicy(0, 0)
	s.write.TotalTimeout = opTimeout
	s.batch = as.NewBatchPolicy()
	s.batch.TotalTimeout = opTimeout
	s.batchWrite = as.NewBatchWritePolicy()

	nsInfo, err := s.namespaceInfo()
	if err != nil {
		c.Close()
		return nil, err
	}
	durability, fsyncs := describeDurability(nsInfo)
	if fsyncs {
		durability = "fsync per write (" + durability + ")"
	} else {
		durability = "async: writes acknowledged before they are on the device (" + durability + ")"
		if isSync {
			durability += "; the study asked for sync, which only an Enterprise strong-consistency namespace with commit-to-device gives"
		}
	}
	if _, werr := c.WarmUp(pool); werr != nil {
		c.Close()
		return nil, werr
	}
	s.settings = map[string]string{
		"server":        redact.Text(o.URI),
		"client":        "aerospike-client-go " + moduleVersion,
		"durability":    durability,
		"pool":          fmt.Sprintf("%d connections per node (ConnectionQueueSize)", pool),
		"layout.ledger": "set txs (key address; bins prev, genesis, idx, ts, type, payload); set chain (key genesis|idx -> bin addr); set balances (key address -> bin amount)",
		"layout.ycsb":   "set usertable: key = record key, bins field0..fieldN-1 (no scan)",
		"batch":         "PutTxs: one batch write of the txs and chain records (each record atomic, the batch not); PutBalances: batch writes of " + strconv.Itoa(balanceBatch),
		"chain_read":    fmt.Sprintf("batch get of chain records in windows of %d indexes until a miss, then batch get of the transactions", chainWindow),
		"namespace":     loc.namespace,
	}
	return s, nil
}

// namespaceInfo asks a node for its namespace's configuration.
func (s *Store) namespaceInfo() (map[string]string, error) {
	nodes := s.c.GetNodes()
	if len(nodes) == 0 {
		return nil, errors.New("no node in the cluster")
	}
	cmd := "namespace/" + s.ns
	info, err := nodes[0].RequestInfo(as.NewInfoPolicy(), cmd)
	if err != nil {
		return nil, err
	}
	raw := info[cmd]
	if raw == "" || strings.HasPrefix(raw, "ERROR") || strings.Contains(raw, "type=unknown") {
		return nil, fmt.Errorf("namespace %q is not configured on the server", s.ns)
	}
	return parseInfo(raw), nil
}

// parseInfo splits an info answer "k1=v1;k2=v2;..." into a map.
func parseInfo(raw string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(raw), ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// describeDurability says how a namespace persists writes, and whether
// each write is on the device when it is acknowledged.
func describeDurability(ns map[string]string) (string, bool) {
	engine := ns["storage-engine"]
	if engine == "" {
		engine = "unknown"
	}
	sc := ns["strong-consistency"] == "true"
	ctd := ns["storage-engine.commit-to-device"] == "true"
	desc := fmt.Sprintf("namespace storage-engine %s, strong-consistency %t, commit-to-device %t", engine, sc, ctd)
	for _, k := range []string{"flush-max-ms", "direct-files"} {
		if v, ok := ns["storage-engine."+k]; ok {
			desc += fmt.Sprintf(", %s %s", k, v)
		}
	}
	return desc, engine == "device" && sc && ctd
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the client.
func (s *Store) Close() error {
	s.c.Close()
	return nil
}

// The ledger layout's batch sizes (workload/ledger's
// layout_aerospike.go), for its settings.
const (
	chainWindow  = 128
	balanceBatch = 5000
)

// AerospikeClient implements conn.Aerospike.
func (s *Store) AerospikeClient() *as.Client { return s.c }

// AerospikeNamespace implements conn.Aerospike.
func (s *Store) AerospikeNamespace() string { return s.ns }

// AerospikePolicies implements conn.Aerospike.
func (s *Store) AerospikePolicies() conn.AerospikePolicies {
	return conn.AerospikePolicies{Read: s.read, Write: s.write, Batch: s.batch, BatchWrite: s.batchWrite}
}
