// Package redis is the storebench target for Redis, through go-redis.
//
// Layouts (each the one a Redis user would pick):
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
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/target/redis/resp"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/setget"
)

// moduleVersion is the go-redis release in go.mod (the test checks it).
const moduleVersion = "v9.23.0"

const (
	name        = "redis"
	defaultPool = 16
	// openTimeout bounds Open against an unreachable server: the brief of
	// every server target is a clear error within 5 s.
	openTimeout = 4 * time.Second
	// chainPage is how many chain members one ZRANGE + MGET round reads.
	chainPage = 256
	ycsbTable = "usertable:"
	// encodedHeader is the size of a canonical transaction less its
	// payload (ledger.Encode); it only sizes buffers.
	encodedHeader = 117
)

var optionNames = []string{"pool"}

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
		Schemes:     []string{"redis"},
		Provides:    target.Caps{target.KeyValue, target.Secondary, target.Pipeline},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := Open(o)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Store is an open Redis client. It implements ledger.Store and ycsb.DB
// and is safe for concurrent use.
type Store struct {
	c        *redis.Client
	opt      *redis.Options
	watch    *targetkit.ConnWatch
	settings map[string]string
	fieldsMu sync.RWMutex
	fields   []any // YCSB field names boxed once (go-redis takes []any), set by Init
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
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, defaultPool, "redis://host:port/db")
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
	return &Store{c: c, opt: opt, watch: watch, settings: map[string]string{
		"server":         target.RedactURI(o.URI),
		"server_version": version,
		"client":         "go-redis " + moduleVersion + ", RESP2",
		"durability":     durability,
		"pool":           fmt.Sprintf("%d connections (and up to %d for pipelines)", pool, pool),
		"layout.ledger":  "tx:<addr> string (canonical encoding); chain:<genesis> sorted set (score index, member address); bal:<addr> decimal string",
		"layout.ycsb":    "usertable:<key> hash field0..fieldN-1 (no scan index: workload E unsupported)",
		"batch":          "PutTxs: one MULTI/EXEC pipeline (SET + ZADD per transaction); PutBalances: one MSET",
		"chain_read":     fmt.Sprintf("ZRANGE pages of %d members, each read with one MGET", chainPage),
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

// NewSession implements setget.Pipeliner: a connection of its own,
// through the allocation-free RESP2 client, for redis-benchmark-shaped
// SET/GET pipelines.
func (s *Store) NewSession(ctx context.Context) (setget.Session, error) {
	if s.opt.Username != "" && s.opt.Username != "default" {
		return nil, fmt.Errorf("redis: setget sessions authenticate the default user only, not %q", s.opt.Username)
	}
	c, err := resp.Dial(ctx, s.opt.Addr, s.opt.DB, s.opt.Password, openTimeout)
	if err != nil {
		return nil, fmt.Errorf("redis: setget session to %s: %w", s.opt.Addr, err)
	}
	return c, nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the client's connections.
func (s *Store) Close() error {
	s.watch.Release()
	return s.c.Close()
}

// Keys are built in one byte slab per call and turned into strings with a
// single conversion: go-redis takes keys as strings.

func appendTxKey(b, addr []byte) []byte      { return append(append(b, "tx:"...), addr...) }
func appendChainKey(b, gen []byte) []byte    { return append(append(b, "chain:"...), gen...) }
func appendBalanceKey(b, addr []byte) []byte { return append(append(b, "bal:"...), addr...) }

// PutTxs implements ledger.Store: one MULTI/EXEC transaction.
func (s *Store) PutTxs(ctx context.Context, txs []ledger.Tx) error {
	if len(txs) == 0 {
		return nil
	}
	keyLen, valLen := 0, 0
	for i := range txs {
		keyLen += len("tx:") + len(txs[i].Address) + len("chain:") + len(txs[i].Genesis)
		valLen += encodedHeader + len(txs[i].Payload)
	}
	kb := make([]byte, 0, keyLen)
	for i := range txs {
		kb = appendTxKey(kb, txs[i].Address)
		kb = appendChainKey(kb, txs[i].Genesis)
	}
	keys := string(kb) // one conversion for every key of the call
	vals := make([]byte, 0, valLen)
	pipe := s.c.TxPipeline()
	off := 0
	for i := range txs {
		tx := &txs[i]
		v := ledger.Encode(vals[len(vals):], *tx)
		if len(v) <= cap(vals)-len(vals) {
			vals = vals[:len(vals)+len(v)] // v was written in place
		}
		txKey := keys[off : off+len("tx:")+len(tx.Address)]
		off += len(txKey)
		chainKey := keys[off : off+len("chain:")+len(tx.Genesis)]
		off += len(chainKey)
		pipe.Set(ctx, txKey, v, 0)
		pipe.ZAdd(ctx, chainKey, redis.Z{Score: float64(tx.Index), Member: tx.Address})
	}
	_, err := pipe.Exec(ctx)
	return err
}

// GetTx implements ledger.Store.
func (s *Store) GetTx(ctx context.Context, address []byte) (ledger.Tx, error) {
	var kb [64]byte
	v, err := s.c.Get(ctx, string(appendTxKey(kb[:0], address))).Bytes()
	if errors.Is(err, redis.Nil) {
		return ledger.Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return ledger.Tx{}, err
	}
	return ledger.Decode(v)
}

// Chain implements ledger.Store: ZRANGE a page of addresses, MGET their
// transactions, repeat.
func (s *Store) Chain(ctx context.Context, genesis []byte, fn func(ledger.Tx) bool) error {
	var kb [64]byte
	chainKey := string(appendChainKey(kb[:0], genesis))
	keys := make([]string, 0, chainPage)
	for start := int64(0); ; start += chainPage {
		members, err := s.c.ZRange(ctx, chainKey, start, start+chainPage-1).Result()
		if err != nil {
			return err
		}
		if len(members) == 0 {
			return nil
		}
		keys = keys[:0]
		for _, m := range members {
			keys = append(keys, "tx:"+m)
		}
		vals, err := s.c.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				return fmt.Errorf("chain %x entry %d: transaction %x: %w", genesis, start+int64(i), members[i], kv.ErrNotFound)
			}
			tx, err := ledger.Decode([]byte(str))
			if err != nil {
				return fmt.Errorf("chain %x entry %d: %w", genesis, start+int64(i), err)
			}
			if !fn(tx) {
				return nil
			}
		}
		if len(members) < chainPage {
			return nil
		}
	}
}

// PutBalances implements ledger.Store: one MSET (atomic).
func (s *Store) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	if len(addrs) == 0 {
		return nil
	}
	size := 0
	for _, a := range addrs {
		size += len("bal:") + len(a) + 20
	}
	slab := make([]byte, 0, size)
	args := make([]any, 0, 2*len(addrs))
	for i, a := range addrs {
		k := len(slab)
		slab = appendBalanceKey(slab, a)
		v := len(slab)
		slab = strconv.AppendUint(slab, amounts[i], 10)
		args = append(args, slab[k:v:v], slab[v:len(slab):len(slab)])
	}
	return s.c.MSet(ctx, args...).Err()
}

// GetBalance implements ledger.Store.
func (s *Store) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var kb [64]byte
	v, err := s.c.Get(ctx, string(appendBalanceKey(kb[:0], address))).Result()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}

// Init implements ycsb.DB: it deletes the records of a previous run
// (SCAN + UNLINK of usertable:*, leaving other keys alone).
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	var cursor uint64
	for {
		keys, next, err := s.c.Scan(ctx, cursor, ycsbTable+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := s.c.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	names := make([]any, fieldCount)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	s.fieldsMu.Lock()
	s.fields = names
	s.fieldsMu.Unlock()
	return nil
}

func (s *Store) fieldNames() ([]any, error) {
	s.fieldsMu.RLock()
	f := s.fields
	s.fieldsMu.RUnlock()
	if f == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return f, nil
}

func ycsbKey(key []byte) string {
	b := make([]byte, 0, len(ycsbTable)+len(key))
	return string(append(append(b, ycsbTable...), key...))
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
	names, err := s.fieldNames()
	if err != nil {
		return err
	}
	if len(fields) > len(names) {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), len(names))
	}
	args := make([]any, 2, 2+2*len(fields))
	args[0], args[1] = "hset", ycsbKey(key)
	for i, f := range fields {
		if f != nil {
			args = append(args, names[i], f)
		}
	}
	if len(args) == 2 {
		return nil
	}
	return s.c.Do(ctx, args...).Err()
}

// Read implements ycsb.DB: HMGET of every field (ordered, no map), the
// values copied into one allocation.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	names, err := s.fieldNames()
	if err != nil {
		return nil, err
	}
	args := make([]any, 2+len(names))
	args[0], args[1] = "hmget", ycsbKey(key)
	copy(args[2:], names)
	vals, err := s.c.Do(ctx, args...).Slice()
	if err != nil {
		return nil, err
	}
	size, found := 0, false
	for _, v := range vals {
		if str, ok := v.(string); ok {
			size += len(str)
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	slab := make([]byte, 0, size)
	out := make([][]byte, len(vals))
	for i, v := range vals {
		str, _ := v.(string)
		start := len(slab)
		slab = append(slab, str...)
		out[i] = slab[start:len(slab):len(slab)]
	}
	return out, nil
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
