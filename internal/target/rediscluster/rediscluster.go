// Package rediscluster is the storebench target for a Redis Cluster,
// through go-redis's ClusterClient: it learns the slot map from any node,
// sends each command to the primary serving the key's slot, and follows
// MOVED redirections after a failover.
//
// YCSB layout: one hash usertable:<key> per record, field0 … field<n-1>,
// as the single-node redis target and YCSB's own Redis binding keep it.
// A record is one key, so it lives in one slot and every operation is
// one command on one primary: an update is one HSET of the fields given
// (no read-modify-write), a read one HMGET. Only YCSB runs here: the
// ledger's and geo's multi-key layouts (MULTI/EXEC, MGET, sorted-set
// indexes across keys) would need hash tags that pin them to one slot,
// which is not a cluster any more.
//
// Durability is the nodes' AOF policy (Open reads it from every primary);
// replication is asynchronous whatever it is, which the target declares
// (ycsb.AsyncReplication): writes lost in a failover are a figure.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/target/internal/ycsbhash"
)

// moduleVersion is the go-redis release in go.mod (the test checks it).
const moduleVersion = "v9.23.0"

const (
	name        = "redis-cluster"
	defaultPool = 16
	openTimeout = 5 * time.Second
	// opTimeout bounds one command: a primary that stopped answering
	// (paused, partitioned) costs an operation this long before it
	// errs and is retried, instead of go-redis's 3 s default.
	opTimeout = time.Second
	ycsbTable = "usertable:"
)

// optionNames: pool is the client's; primaries and replicas shape the
// managed cluster (read by the server, stated here).
var optionNames = []string{"pool", "primaries", "replicas"}

func init() {
	target.Register(target.Info{
		Name:           name,
		Title:          "Redis Cluster",
		Version:        "go-redis " + moduleVersion + " ClusterClient",
		OptionNames:    optionNames,
		Server:         name,
		Schemes:        []string{"redis-cluster"},
		LoneUserSecret: []string{"redis-cluster"},
		Provides:       target.Caps{target.KeyValue, target.Shared},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := Open(o)
			if err != nil {
				return nil, target.OpenError(name, o.URI, err)
			}
			return s, nil
		},
	})
}

// Store is an open cluster client; it implements ycsb.DB and is safe for
// concurrent use.
type Store struct {
	c        *redis.ClusterClient
	addrs    []string
	password string
	settings map[string]string
	external bool // a server named by URI: Reset deletes only own keys

	table ycsbhash.Table // the YCSB layout's field names
}

// Open connects to o.URI (redis-cluster://[:password@]host:port,host:port,…),
// loads the slot map and checks the nodes' durability.
func Open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), "redis-cluster://:password@host:port,host:port,...")
	if err != nil {
		return nil, err
	}
	addrs, password, err := parseURI(o.URI)
	if err != nil {
		return nil, err
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, Password: password, Protocol: 2, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 sv.Pool, DialTimeout: opTimeout, ReadTimeout: opTimeout, WriteTimeout: opTimeout,
		ContextTimeoutEnabled: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		// A node that does not answer fails the ping at opTimeout, unless
		// the whole open ran out first.
		bound := opTimeout
		if ctx.Err() != nil {
			bound = openTimeout
		}
		return nil, target.NoAnswer(err, bound)
	}
	// The durability each primary applies, which a sync study needs to be
	// an fsync per write on all of them.
	var mu sync.Mutex
	policies := map[string]bool{}
	notSync := ""
	version := "unknown"
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		cfg, err := m.ConfigGet(ctx, "append*").Result()
		if err != nil {
			return err
		}
		info, _ := m.Info(ctx, "server").Result()
		mu.Lock()
		defer mu.Unlock()
		p := "appendonly " + cfg["appendonly"] + ", appendfsync " + cfg["appendfsync"]
		policies[p] = true
		if cfg["appendonly"] != "yes" || cfg["appendfsync"] != "always" {
			notSync = m.Options().Addr + " has " + p
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				version = v
			}
		}
		return nil
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the primaries' settings: %w", err)
	}
	if sv.Sync && notSync != "" {
		c.Close()
		return nil, fmt.Errorf("the study asks for sync durability but %s: start every node with appendonly yes and appendfsync always", notSync)
	}
	var ps []string
	for p := range policies {
		ps = append(ps, p)
	}
	return &Store{c: c, addrs: addrs, password: password, external: o.External, settings: map[string]string{
		"server":         redact.Text(o.URI),
		"server_version": version,
		"client":         "go-redis " + moduleVersion + " ClusterClient, RESP2, reads from primaries",
		"durability":     "server's: " + strings.Join(ps, "; ") + " on the primaries; replication asynchronous",
		"pool":           fmt.Sprintf("%d connections per node", sv.Pool),
		"timeouts":       fmt.Sprintf("%v per command (dial, read, write); go-redis follows MOVED and retries a failed node up to 3 times; any error that is not a server reply reloads the slot map", opTimeout),
		"layout.ycsb":    "usertable:<key> hash field0..fieldN-1, one key (one slot) per record (no scan index: workload E unsupported)",
	}}, nil
}

// parseURI reads redis-cluster://[user:password@]host:port,host:port,...
func parseURI(uri string) (addrs []string, password string, err error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, "", err
	}
	if u.Scheme != "redis-cluster" {
		return nil, "", fmt.Errorf("scheme %q: want redis-cluster://", u.Scheme)
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, "", fmt.Errorf("database %q: a Redis Cluster has database 0 only", p)
	}
	password, _ = u.User.Password()
	for _, hp := range strings.Split(u.Host, ",") {
		if _, _, err := net.SplitHostPort(hp); err != nil {
			return nil, "", fmt.Errorf("node %q: want host:port", hp)
		}
		addrs = append(addrs, hp)
	}
	return addrs, password, nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes every connection.
func (s *Store) Close() error { return s.c.Close() }

// Reset implements target.Resetter: FLUSHALL on every primary (the
// replicas follow) of a cluster storebench started; on one named by URI
// only the keys under storebench's own prefixes, on every primary.
func (s *Store) Reset(ctx context.Context) error {
	if !s.external {
		return s.c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() })
	}
	return s.Cleanup(ctx)
}

// ownPrefixes are the key prefixes storebench writes on a cluster: the
// workloads' (conn.OwnKeyPrefixes) and this target's YCSB layout's.
func ownPrefixes() []string { return append(conn.OwnKeyPrefixes(), ycsbhash.Prefix) }

// Cleanup implements target.Cleaner: the keys under storebench's own
// prefixes on every primary, and nothing else.
func (s *Store) Cleanup(ctx context.Context) error {
	return s.c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return targetkit.RESPDeleteOwn(ctx, m, ownPrefixes())
	})
}

// Occupancy implements target.Occupant: the keys of every primary, and
// those under storebench's own prefixes.
func (s *Store) Occupancy(ctx context.Context) (target.Occupancy, error) {
	var mu sync.Mutex
	all := target.Occupancy{Unit: "keys", OwnNames: ownPrefixes()}
	err := s.c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		o, err := targetkit.RESPOccupancy(ctx, m, ownPrefixes())
		mu.Lock()
		all.Foreign, all.Own = all.Foreign+o.Foreign, all.Own+o.Own
		mu.Unlock()
		return err
	})
	return all, err
}

// Init implements ycsb.DB: it deletes the records of a previous run on
// every primary (SCAN usertable:*, then one UNLINK per key: keys of one
// node may sit in different slots, and a multi-key UNLINK must not cross
// slots), leaving other keys alone.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if err := s.Attach(ctx, fieldCount); err != nil {
		return err
	}
	return s.c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := m.Scan(ctx, cursor, ycsbhash.Prefix+"*", 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				p := m.Pipeline()
				for _, k := range keys {
					p.Unlink(ctx, k)
				}
				if _, err := p.Exec(ctx); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	})
}

// Attach implements ycsb.Attacher: this handle learns the field names.
func (s *Store) Attach(_ context.Context, fieldCount int) error {
	return s.table.SetFields(fieldCount)
}

// Insert implements ycsb.DB: one HSET of every field.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	return s.hset(ctx, key, fields)
}

// Update implements ycsb.DB: one HSET of the non-nil fields.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	return s.hset(ctx, key, fields)
}

func (s *Store) hset(ctx context.Context, key []byte, fields [][]byte) error {
	args, err := s.table.HSet(key, fields)
	if err != nil || args == nil {
		return err
	}
	return s.refreshOn(s.c.Do(ctx, args...).Err())
}

// refreshOn asks the client to reload the slot map (in the background,
// concurrent requests collapsed into one) after an error that is not a
// server's reply: a timeout or a refused connection means the node may
// have failed and another may serve its slots now. go-redis reloads on
// MOVED, but a paused primary answers nothing, so without this the
// client kept sending its slots' commands there, each timing out, until
// it came back; with it, the retries reach the promoted replica as soon
// as the cluster has failed over.
func (s *Store) refreshOn(err error) error {
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) && !errors.Is(err, context.Canceled) {
		s.c.ReloadState(context.Background())
	}
	return err
}

// Read implements ycsb.DB: HMGET of every field from the key's primary.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	args, err := s.table.HMGet(key)
	if err != nil {
		return nil, err
	}
	vals, err := s.c.Do(ctx, args...).Slice()
	if err != nil {
		return nil, s.refreshOn(err)
	}
	return ycsbhash.Values(key, vals)
}

// ReadDurable implements ycsb.DurableReader: the read after faults goes
// to the primary that serves the key's slot now (after a failover the
// promoted replica: a former primary, now its replica, answers MOVED and
// the client follows). Redis has no stronger read: what that primary
// lacks is lost.
func (s *Store) ReadDurable(ctx context.Context, key []byte) ([][]byte, error) {
	return s.Read(ctx, key)
}

// DurableRead implements ycsb.DurableReader.
func (s *Store) DurableRead() string {
	return "the primary serving each key's slot after the faults (a promoted replica where a failover happened)"
}

// AsyncReplication implements ycsb.AsyncReplication.
func (s *Store) AsyncReplication() string {
	return "Redis Cluster replicates asynchronously: a primary acknowledges a write before its replica has it, " +
		"and a replica promoted when its primary fails lacks what had not reached it (storebench does not use WAIT, as ordinary clients do not)"
}
