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
//	ycsb    usertable    (y_id text PRIMARY KEY, field0 blob, …)
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
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/workload/ledger"
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
	// maxBatchBytes bounds one single-partition batch, well under the
	// default max_mutation_size (half a 32 MiB commit-log segment).
	maxBatchBytes = 4 << 20
	// writers bounds the concurrent single-row writes of one call.
	writers = 16
)

var optionNames = []string{"pool"}

var identifier = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "Apache Cassandra",
		Version:     "gocql " + moduleVersion,
		OptionNames: optionNames,
		Server:      "cassandra",
		Schemes:     []string{"cassandra"},
		Provides:    target.Caps{target.KeyValue, target.Secondary},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := Open(o)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}

// Store is an open session. It implements ledger.Store and ycsb.DB
// (without Scanner: rows are ordered by token, not key) and is safe for
// concurrent use.
type Store struct {
	s        *gocql.Session
	ks       string
	settings map[string]string

	putAddr, putChain, getTx, chain, putBalance, getBalance string

	mu   sync.RWMutex
	ycsb *ycsbCQL
}

// Open connects to o.URI (cassandra://[user:password@]host:port/keyspace),
// creating the keyspace (SimpleStrategy, replication factor 1) and the
// ledger tables if they are missing.
func Open(o target.Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, defaultPool, "cassandra://host:port/keyspace")
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	u, err := url.Parse(o.URI)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "cassandra" {
		return nil, fmt.Errorf("scheme %q: want cassandra://", u.Scheme)
	}
	ks := strings.Trim(u.Path, "/")
	if ks == "" {
		ks = defaultKeyspace
	}
	if !identifier.MatchString(ks) {
		return nil, fmt.Errorf("keyspace %q: want a CQL identifier (letters, digits, _)", ks)
	}
	host, port := u.Hostname(), 9042
	if host == "" {
		host = "127.0.0.1"
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("bad port %q", p)
		}
	}
	c := gocql.NewCluster(net.JoinHostPort(host, strconv.Itoa(port)))
	c.Consistency = gocql.One
	c.ConnectTimeout = connectTimeout
	c.Timeout = queryTimeout
	c.NumConns = pool
	// One connection attempt at start-up, so that an unreachable node fails
	// Open at once (MaxRetries counts attempts; gocql v2.1.2 misbehaves
	// with 0).
	c.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1, Interval: time.Second}
	c.PageSize = chainPage
	if u.User != nil {
		pw, _ := u.User.Password()
		c.Authenticator = gocql.PasswordAuthenticator{Username: u.User.Username(), Password: pw}
	}
	sess, err := c.CreateSession()
	if err != nil {
		return nil, err
	}
	s := &Store{s: sess, ks: ks}
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
	ddl := []string{
		`CREATE KEYSPACE IF NOT EXISTS ` + ks + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.txs_by_addr (addr blob PRIMARY KEY, prev blob, genesis blob, idx bigint, ts bigint, type int, payload blob)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.txs_by_chain (genesis blob, idx bigint, addr blob, prev blob, ts bigint, type int, payload blob,
			PRIMARY KEY ((genesis), idx)) WITH CLUSTERING ORDER BY (idx ASC)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.balances (addr blob PRIMARY KEY, amount bigint)`,
	}
	for _, q := range ddl {
		if err := s.s.Query(q).ExecContext(ctx); err != nil {
			return fmt.Errorf("creating the ledger schema: %w", err)
		}
	}
	s.putAddr = `INSERT INTO ` + ks + `.txs_by_addr (addr, prev, genesis, idx, ts, type, payload) VALUES (?, ?, ?, ?, ?, ?, ?)`
	s.putChain = `INSERT INTO ` + ks + `.txs_by_chain (genesis, idx, addr, prev, ts, type, payload) VALUES (?, ?, ?, ?, ?, ?, ?)`
	s.getTx = `SELECT prev, genesis, idx, ts, type, payload FROM ` + ks + `.txs_by_addr WHERE addr = ?`
	s.chain = `SELECT idx, addr, prev, ts, type, payload FROM ` + ks + `.txs_by_chain WHERE genesis = ?`
	s.putBalance = `INSERT INTO ` + ks + `.balances (addr, amount) VALUES (?, ?)`
	s.getBalance = `SELECT amount FROM ` + ks + `.balances WHERE addr = ?`
	s.settings = map[string]string{
		"server":         target.RedactURI(uri),
		"server_version": version,
		"client":         "gocql " + moduleVersion + " (statements prepared and cached by the driver)",
		"durability":     durability,
		"consistency":    "ONE for reads and writes",
		"pool":           fmt.Sprintf("%d connections per node (NumConns; each multiplexes many requests)", pool),
		"keyspace":       ks,
		"layout.ledger":  "txs_by_addr (addr PK) and txs_by_chain (partition genesis, clustering idx ASC) both hold the whole transaction; balances (addr PK, amount bigint)",
		"layout.ycsb":    "usertable (y_id text PK, field0..fieldN-1 blob); no scan (token order)",
		"batch": "PutTxs: txs_by_chain rows of a chain in one UNLOGGED single-partition batch (atomic and isolated within the partition, no batchlog, exempt from batch size thresholds); " +
			"txs_by_addr rows as concurrent single-row INSERTs (a multi-partition batch would exceed batch_size_fail_threshold, a LOGGED one doubles the writes through the batchlog); all idempotent upserts",
		"chain_read": fmt.Sprintf("one partition of txs_by_chain in clustering order, pages of %d rows", chainPage),
	}
	return nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the session.
func (s *Store) Close() error {
	s.s.Close()
	return nil
}

// parallel runs fn(0..n-1) on up to writers goroutines and returns the
// first error.
func parallel(n int, fn func(i int) error) error {
	w := min(n, writers)
	if w <= 1 {
		for i := 0; i < n; i++ {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// PutTxs implements ledger.Store (see the package comment).
func (s *Store) PutTxs(ctx context.Context, txs []ledger.Tx) error {
	if len(txs) == 0 {
		return nil
	}
	// Chain batches: consecutive runs of one genesis, cut at maxBatchBytes.
	type run struct{ from, to int }
	var runs []run
	size := 0
	for i := range txs {
		n := 117 + len(txs[i].Payload) + 64
		if i == 0 || string(txs[i].Genesis) != string(txs[runs[len(runs)-1].from].Genesis) || size+n > maxBatchBytes {
			runs = append(runs, run{i, i})
			size = 0
		}
		runs[len(runs)-1].to = i + 1
		size += n
	}
	return parallel(len(runs)+len(txs), func(i int) error {
		if i < len(runs) {
			b := s.s.Batch(gocql.UnloggedBatch).WithContext(ctx)
			for j := runs[i].from; j < runs[i].to; j++ {
				t := &txs[j]
				b.Query(s.putChain, t.Genesis, int64(t.Index), t.Address, nonNil(t.Prev), t.Timestamp, int(t.Type), nonNil(t.Payload))
			}
			return b.ExecContext(ctx)
		}
		t := &txs[i-len(runs)]
		return s.s.Query(s.putAddr, t.Address, nonNil(t.Prev), t.Genesis, int64(t.Index), t.Timestamp, int(t.Type), nonNil(t.Payload)).ExecContext(ctx)
	})
}

// GetTx implements ledger.Store.
func (s *Store) GetTx(ctx context.Context, address []byte) (ledger.Tx, error) {
	var tx ledger.Tx
	var idx int64
	var typ int
	err := s.s.Query(s.getTx, address).ScanContext(ctx, &tx.Prev, &tx.Genesis, &idx, &tx.Timestamp, &typ, &tx.Payload)
	if errors.Is(err, gocql.ErrNotFound) {
		return ledger.Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return ledger.Tx{}, err
	}
	tx.Address = append([]byte(nil), address...)
	tx.Index, tx.Type = uint64(idx), uint8(typ)
	if tx.Payload == nil {
		tx.Payload = []byte{}
	}
	return tx, nil
}

// Chain implements ledger.Store: one partition, in clustering order.
func (s *Store) Chain(ctx context.Context, genesis []byte, fn func(ledger.Tx) bool) error {
	iter := s.s.Query(s.chain, genesis).PageSize(chainPage).IterContext(ctx)
	scanner := iter.Scanner()
	for scanner.Next() {
		var tx ledger.Tx
		var idx int64
		var typ int
		if err := scanner.Scan(&idx, &tx.Address, &tx.Prev, &tx.Timestamp, &typ, &tx.Payload); err != nil {
			iter.Close()
			return err
		}
		tx.Genesis = append([]byte(nil), genesis...)
		tx.Index, tx.Type = uint64(idx), uint8(typ)
		if !fn(tx) {
			return iter.Close()
		}
	}
	return scanner.Err()
}

// PutBalances implements ledger.Store: concurrent single-row upserts (one
// partition each).
func (s *Store) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	return parallel(len(addrs), func(i int) error {
		return s.s.Query(s.putBalance, addrs[i], int64(amounts[i])).ExecContext(ctx)
	})
}

// GetBalance implements ledger.Store.
func (s *Store) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var v int64
	err := s.s.Query(s.getBalance, address).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	return uint64(v), err
}

// ycsbCQL holds the statements for a usertable of n fields.
type ycsbCQL struct {
	n            int
	insert, read string
	updates      sync.Map // field mask (uint64) -> UPDATE statement
}

func (s *Store) statements() (*ycsbCQL, error) {
	s.mu.RLock()
	q := s.ycsb
	s.mu.RUnlock()
	if q == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return q, nil
}

// Init implements ycsb.DB: it drops and recreates usertable.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	var ddl, cols, marks strings.Builder
	ddl.WriteString("CREATE TABLE " + s.ks + ".usertable (y_id text PRIMARY KEY")
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&ddl, ", field%d blob", i)
		fmt.Fprintf(&cols, ", field%d", i)
		marks.WriteString(", ?")
	}
	ddl.WriteString(")")
	for _, q := range []string{"DROP TABLE IF EXISTS " + s.ks + ".usertable", ddl.String()} {
		if err := s.s.Query(q).ExecContext(ctx); err != nil {
			return err
		}
	}
	c := cols.String()[2:]
	s.mu.Lock()
	s.ycsb = &ycsbCQL{
		n:      fieldCount,
		insert: "INSERT INTO " + s.ks + ".usertable (y_id, " + c + ") VALUES (?" + marks.String() + ")",
		read:   "SELECT " + c + " FROM " + s.ks + ".usertable WHERE y_id = ?",
	}
	s.mu.Unlock()
	return nil
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) != q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	args := make([]any, 1+len(fields))
	args[0] = string(key)
	for i, f := range fields {
		args[1+i] = nonNil(f)
	}
	return s.s.Query(q.insert, args...).ExecContext(ctx)
}

// Update implements ycsb.DB: an UPDATE of the non-nil columns (an upsert,
// as in YCSB's own Cassandra binding).
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	args := make([]any, 0, 1+len(fields))
	var mask uint64
	for i, f := range fields {
		if f != nil {
			args = append(args, f)
			if i < 64 {
				mask |= 1 << i
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	args = append(args, string(key))
	var stmt string
	if v, ok := q.updates.Load(mask); ok && len(fields) <= 64 {
		stmt = v.(string)
	} else {
		var b strings.Builder
		b.WriteString("UPDATE " + s.ks + ".usertable SET ")
		first := true
		for i, f := range fields {
			if f == nil {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, "field%d = ?", i)
		}
		b.WriteString(" WHERE y_id = ?")
		stmt = b.String()
		if len(fields) <= 64 {
			q.updates.Store(mask, stmt)
		}
	}
	return s.s.Query(stmt, args...).ExecContext(ctx)
}

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	q, err := s.statements()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, q.n)
	dest := make([]any, q.n)
	for i := range out {
		dest[i] = &out[i]
	}
	err = s.s.Query(q.read, string(key)).ScanContext(ctx, dest...)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out, nil
}
