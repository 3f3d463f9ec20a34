// Package redis is the storebench target for Redis, through go-redis.
//
// Layouts (each the one a Redis user would pick; the ledger's and geo's
// are the workloads' own, on RESPClient: their packages' layout_resp.go):
//
//	ledger  tx:<addr>      string: the transaction's canonical encoding
//	        chain:<gen>    sorted set: member = address, score = index
//	        bal:<addr>     string: the balance in decimal (INCRBY-able)
//	ycsb    usertable:<key> hash: field0 … field<n-1>
//
// The setget workload (redis-benchmark shaped) gets a connection of its
// own per load goroutine through NewSession.
//
// PutTxs is one MULTI/EXEC pipeline (atomic, one round trip); Chain pages
// through ZRANGE and reads each page of transactions with one MGET. YCSB
// has no Scan: a sorted-set index, as YCSB's own Redis binding keeps, would
// double every write, so workload E is left to the stores that scan.
//
// Durability is the server's (appendonly/appendfsync): a client cannot ask
// Redis for an fsync per write. Open reads the server's setting and refuses
// a sync study on a server that does not fsync every write.
package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/target/internal/ycsbhash"
)

// moduleVersion is the go-redis release in go.mod (the test checks it).
const moduleVersion = "v9.23.0"

const (
	name        = "redis"
	defaultPool = 16
	// openTimeout bounds Open against an unreachable server: the brief of
	// every server target is a clear error within 5 s.
	openTimeout = 4 * time.Second
)

// optionNames: appendfsync is the managed server's (its AOF fsync policy
// under durability async: no or everysec); the client ignores it.
var optionNames = []string{"pool", "appendfsync"}

func init() {
	// go-redis logs every failed dial to stderr; Open and each operation
	// return the error instead.
	redis.SetLogger(quietLogger{})
	target.Register(target.Info{
		Name:        name,
		Title:       "Redis",
		Version:     "go-redis " + moduleVersion,
		OptionNames: optionNames,
		Server:      "redis",
		Default:     kv.Async,
		DefaultNote: "Redis ships appendonly no (RDB snapshots only): nothing is fsynced per write; storebench's managed Redis keeps " +
			"snapshots off and runs the nearest class, async (appendonly yes, appendfsync no)",
		Schemes: []string{"redis"},
		// redis://PASSWORD@host: an old Redis habit (no users before 6).
		LoneUserSecret: []string{"redis", "rediss"},
		Provides:       target.Caps{target.KeyValue, target.Secondary, target.Pipeline, target.SortedSets, target.Shared},
		Open:           targetkit.Closer(Open),
	})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Store is an open Redis client. It implements conn.RESP and ycsb.DB
// and is safe for concurrent use.
type Store struct {
	c        *redis.Client
	opt      *redis.Options
	watch    *targetkit.ConnWatch
	settings map[string]string
	external bool // a server named by URI: Reset deletes only own keys
	// ycsb layout (ycsb.go)
	table ycsbhash.Table // the YCSB layout's field names, set by Init
}

// Open connects to o.URI (redis://[user:password@]host:port/db) and checks
// that the server answers and honours the study's durability class.
func Open(o target.Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, openError(o.URI, err)
	}
	return s, nil
}

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), "redis://host:port/db")
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	opt, err := redis.ParseURL(o.URI)
	if err != nil {
		return nil, err
	}
	opt.Protocol = 2 // RESP2, as redis-benchmark speaks: no push notifications to process
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.PoolSize = pool
	opt.PipelinePoolSize = pool
	opt.MinIdleConns = 0
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 2 * time.Second
	}
	opt.DialerRetries = 1
	// Reads and writes honour the caller's deadline (Open's among them).
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	watch := targetkit.NewConnWatch()
	c.AddHook(cancelHook{watch})
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	// Open's commands are bounded by ctx's deadline (ContextTimeoutEnabled),
	// and the watch lets ctx go before it ends (deferred calls run last
	// first): its end as Open returns would otherwise set a deadline in
	// the past on every connection, from a goroutine that may run after
	// the next command set its own, failing it with "i/o timeout".
	defer watch.Release()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, noAnswer(err)
	}
	serverDurability, known, fsyncsEveryWrite := readDurability(ctx, c)
	if isSync && known && !fsyncsEveryWrite {
		c.Close()
		return nil, fmt.Errorf("the study asks for sync durability but the server has %s: "+
			"start it with appendonly yes and appendfsync always", serverDurability)
	}
	version := "unknown"
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		version = infoField(info, "redis_version")
	}
	durability := "server's: " + serverDurability
	if !isSync {
		durability += " (async study: Redis cannot be asked for less per client)"
	}
	// The layouts are the workloads' (ledger's and geo's layout_resp.go),
	// described here as every report has shown them.
	return &Store{c: c, opt: opt, watch: watch, external: o.External, settings: map[string]string{
		"server":         redact.Text(o.URI),
		"server_version": version,
		"client":         "go-redis " + moduleVersion + ", RESP2",
		"durability":     durability,
		"pool":           fmt.Sprintf("%d connections (and up to %d for pipelines)", pool, pool),
		"layout.ledger":  "tx:<addr> string (canonical encoding); chain:<genesis> sorted set (score index, member address); bal:<addr> decimal string",
		"layout.ycsb":    "usertable:<key> hash field0..fieldN-1 (no scan index: workload E unsupported)",
		"layout.geo":     "sorted sets geo:z:<block>:<zx>:<zy> (score ts, member user|ts|lat|lon) and geo:u:<block>:<user> (score ts), blocks of 1000 s and zones of 100 m; GC deletes whole blocks",
		"batch":          "PutTxs: one MULTI/EXEC pipeline (SET + ZADD per transaction); PutBalances: one MSET",
		"chain_read":     "ZRANGE pages of 256 members, each read with one MGET",
		"setget":         "one connection per load goroutine with the allocation-free RESP2 pipeline client (internal/target/redis/resp)",
	}}, nil
}

// readDurability describes the server's persistence and says whether it
// fsyncs every write before replying; known is false when the server
// would not say (CONFIG disabled).
func readDurability(ctx context.Context, c *redis.Client) (desc string, known, fsyncsEveryWrite bool) {
	cfg, err := c.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return "unknown persistence (CONFIG GET refused: " + err.Error() + "; unverified)", false, false
	}
	aof, fsync := cfg["appendonly"], cfg["appendfsync"]
	return "appendonly " + aof + ", appendfsync " + fsync, true, aof == "yes" && fsync == "always"
}

func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "unknown"
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the client's connections.
func (s *Store) Close() error {
	s.watch.Release()
	return s.c.Close()
}

// noAnswer says what a deadline during Open means.
func noAnswer(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: %w", openTimeout, err)
	}
	return err
}

// openError names the target and the redacted URI, and scrubs the
// password from the driver's message (url.Parse errors quote the URI).
func openError(uri string, err error) error {
	return target.OpenError(name, uri, err)
}

// RESPClient implements conn.RESP: the workloads' layouts (ledger, geo)
// run on the client.
func (s *Store) RESPClient() *redis.Client { return s.c }
