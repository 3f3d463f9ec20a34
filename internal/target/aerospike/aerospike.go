// Package aerospike is the storebench target for Aerospike, through the
// official Go client.
//
// No Aerospike server can be installed on storebench's machines (it is not
// packaged for Debian), so this target is external only: the study gives
// aerospike://[user:password@]host:port/namespace. Its tests cover the
// key and bin mapping (pure functions) and the failure to open against a
// closed port; the operations themselves have never run against a server
// here.
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
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	as "github.com/aerospike/aerospike-client-go/v8"
	"github.com/aerospike/aerospike-client-go/v8/types"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/workload/ledger"
)

// moduleVersion is the client release in go.mod (the test checks it).
const moduleVersion = "v8.5.0"

const (
	name             = "aerospike"
	defaultPool      = 16
	defaultNamespace = "test"
	openTimeout      = 4 * time.Second
	opTimeout        = 10 * time.Second
	chainWindow      = 128
	balanceBatch     = 5000

	setTxs      = "txs"
	setChain    = "chain"
	setBalances = "balances"
	setYCSB     = "usertable"

	binPrev    = "prev"
	binGenesis = "genesis"
	binIdx     = "idx"
	binTs      = "ts"
	binType    = "type"
	binPayload = "payload"
	binAddr    = "addr"
	binAmount  = "amount"
)

var optionNames = []string{"pool"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "Aerospike",
		Version:     "aerospike-client-go " + moduleVersion,
		OptionNames: optionNames,
		Server:      "", // no Aerospike server can be installed here: external only
		Schemes:     []string{"aerospike"},
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

// Store is an open Aerospike client. It implements ledger.Store and
// ycsb.DB (without Scanner) and is safe for concurrent use.
type Store struct {
	c        *as.Client
	ns       string
	settings map[string]string

	read       *as.BasePolicy
	write      *as.WritePolicy
	updateOnly *as.WritePolicy
	batch      *as.BatchPolicy
	batchWrite *as.BatchWritePolicy
	fieldsMu   sync.RWMutex
	fieldNames []string
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
		return location{}, fmt.Errorf("namespace %q: want aerospike://host:port/namespace", l.namespace)
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
func Open(o target.Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, defaultPool, "aerospike://host:port/namespace")
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
		return nil, aerr
	}
	s := &Store{c: c, ns: loc.namespace}
	s.read = as.NewPolicy()
	s.read.TotalTimeout = opTimeout
	s.write = as.NewWritePolicy(0, 0)
	s.write.TotalTimeout = opTimeout
	s.updateOnly = as.NewWritePolicy(0, 0)
	s.updateOnly.TotalTimeout = opTimeout
	s.updateOnly.RecordExistsAction = as.UPDATE_ONLY
	s.batch = as.NewBatchPolicy()
	s.batch.TotalTimeout = opTimeout
	s.batchWrite = as.NewBatchWritePolicy()

	nsInfo, err := s.namespaceInfo()
	if err != nil {
		c.Close()
		return nil, err
	}
	durability, fsyncs := describeDurability(nsInfo)
	if isSync && !fsyncs {
		c.Close()
		return nil, fmt.Errorf("the study asks for sync durability but namespace %s has %s: "+
			"only a strong-consistency namespace with commit-to-device true flushes each write to the device", loc.namespace, durability)
	}
	if _, werr := c.WarmUp(pool); werr != nil {
		c.Close()
		return nil, werr
	}
	s.settings = map[string]string{
		"server":        target.RedactURI(o.URI),
		"client":        "aerospike-client-go " + moduleVersion,
		"durability":    "server's namespace configuration: " + durability + " (a client cannot ask for an fsync)",
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
	desc := fmt.Sprintf("storage-engine %s, strong-consistency %t, commit-to-device %t", engine, sc, ctd)
	return desc, engine == "device" && sc && ctd
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the client.
func (s *Store) Close() error {
	s.c.Close()
	return nil
}

// TxKey is the key of a transaction's record.
func TxKey(ns string, address []byte) (*as.Key, error) {
	k, err := as.NewKey(ns, setTxs, address)
	return k, asError(err)
}

// ChainKeyValue is the user key of chain entry (genesis, index): the
// genesis, '|' and the index in 8 big-endian bytes.
func ChainKeyValue(genesis []byte, index uint64) []byte {
	b := make([]byte, 0, len(genesis)+9)
	b = append(b, genesis...)
	b = append(b, '|')
	return binary.BigEndian.AppendUint64(b, index)
}

// ChainKey is the key of chain entry (genesis, index).
func ChainKey(ns string, genesis []byte, index uint64) (*as.Key, error) {
	k, err := as.NewKey(ns, setChain, ChainKeyValue(genesis, index))
	return k, asError(err)
}

// BalanceKey is the key of an address's balance.
func BalanceKey(ns string, address []byte) (*as.Key, error) {
	k, err := as.NewKey(ns, setBalances, address)
	return k, asError(err)
}

// TxBins are the bins of a transaction's record (the address is the key).
func TxBins(tx ledger.Tx) []*as.Bin {
	return []*as.Bin{
		as.NewBin(binPrev, nonNil(tx.Prev)),
		as.NewBin(binGenesis, nonNil(tx.Genesis)),
		as.NewBin(binIdx, int64(tx.Index)),
		as.NewBin(binTs, tx.Timestamp),
		as.NewBin(binType, int(tx.Type)),
		as.NewBin(binPayload, nonNil(tx.Payload)),
	}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// TxFromBins rebuilds the transaction of address from its record's bins.
// The transaction owns copies of its bytes, in one allocation.
func TxFromBins(address []byte, bins as.BinMap) (ledger.Tx, error) {
	prev, err1 := bytesBin(bins, binPrev, false)
	gen, err2 := bytesBin(bins, binGenesis, false)
	payload, err3 := bytesBin(bins, binPayload, true) // an empty blob may come back absent
	idx, err4 := intBin(bins, binIdx)
	ts, err5 := intBin(bins, binTs)
	typ, err6 := intBin(bins, binType)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return ledger.Tx{}, fmt.Errorf("transaction %x: %w", address, err)
	}
	if typ < 0 || typ > 255 {
		return ledger.Tx{}, fmt.Errorf("transaction %x: type %d out of range", address, typ)
	}
	n := len(address) + len(prev) + len(gen) + len(payload)
	b := make([]byte, 0, n)
	b = append(b, address...)
	b = append(b, prev...)
	b = append(b, gen...)
	b = append(b, payload...)
	a, p, g := len(address), len(prev), len(gen)
	return ledger.Tx{
		Address:   b[:a:a],
		Prev:      b[a : a+p : a+p],
		Genesis:   b[a+p : a+p+g : a+p+g],
		Index:     uint64(idx),
		Timestamp: ts,
		Type:      uint8(typ),
		Payload:   b[a+p+g : n : n],
	}, nil
}

func bytesBin(bins as.BinMap, name string, optional bool) ([]byte, error) {
	v, ok := bins[name]
	if !ok || v == nil {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("bin %s missing", name)
	}
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("bin %s is a %T, want bytes", name, v)
	}
	return b, nil
}

func intBin(bins as.BinMap, name string) (int64, error) {
	switch v := bins[name].(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case nil:
		return 0, fmt.Errorf("bin %s missing", name)
	default:
		return 0, fmt.Errorf("bin %s is a %T, want an integer", name, v)
	}
}

// FieldNames are the YCSB bin names of a record of n fields.
func FieldNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	return names
}

// FieldBins are the bins that write the non-nil fields.
func FieldBins(names []string, fields [][]byte) ([]*as.Bin, error) {
	if len(fields) > len(names) {
		return nil, fmt.Errorf("ycsb: %d fields, records have %d", len(fields), len(names))
	}
	bins := make([]*as.Bin, 0, len(fields))
	for i, f := range fields {
		if f != nil {
			bins = append(bins, as.NewBin(names[i], f))
		}
	}
	return bins, nil
}

// FieldsFromBins returns a record's fields in order; a field whose bin is
// absent (an empty value) reads back empty.
func FieldsFromBins(names []string, bins as.BinMap) ([][]byte, error) {
	out := make([][]byte, len(names))
	for i, n := range names {
		b, err := bytesBin(bins, n, true)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = []byte{}
		}
		out[i] = b
	}
	return out, nil
}

// asError turns the client's Error interface into a plain error without
// wrapping a typed nil.
func asError(err as.Error) error {
	if err == nil {
		return nil
	}
	return err
}

func isNotFound(err as.Error) bool {
	return err != nil && err.Matches(types.KEY_NOT_FOUND_ERROR)
}

// The Aerospike client takes no context: every operation checks the
// caller's before each round trip, and a round trip is bounded by the
// policies' TotalTimeout (opTimeout).

// PutTxs implements ledger.Store: one batch write of every transaction's
// record and chain entry.
func (s *Store) PutTxs(ctx context.Context, txs []ledger.Tx) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(txs) == 0 {
		return nil
	}
	recs := make([]as.BatchRecordIfc, 0, 2*len(txs))
	for i := range txs {
		tk, err := TxKey(s.ns, txs[i].Address)
		if err != nil {
			return err
		}
		ck, err := ChainKey(s.ns, txs[i].Genesis, txs[i].Index)
		if err != nil {
			return err
		}
		bins := TxBins(txs[i])
		ops := make([]*as.Operation, len(bins))
		for j, b := range bins {
			ops[j] = as.PutOp(b)
		}
		recs = append(recs,
			as.NewBatchWrite(s.batchWrite, tk, ops...),
			as.NewBatchWrite(s.batchWrite, ck, as.PutOp(as.NewBin(binAddr, txs[i].Address))))
	}
	return s.batchOperate(recs)
}

func (s *Store) batchOperate(recs []as.BatchRecordIfc) error {
	if err := s.c.BatchOperate(s.batch, recs); err != nil {
		return err
	}
	for _, r := range recs {
		if br := r.BatchRec(); br.ResultCode != types.OK {
			if br.Err != nil {
				return br.Err
			}
			return fmt.Errorf("batch write of %v: result %v", br.Key, br.ResultCode)
		}
	}
	return nil
}

// GetTx implements ledger.Store.
func (s *Store) GetTx(ctx context.Context, address []byte) (ledger.Tx, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Tx{}, err
	}
	k, err := TxKey(s.ns, address)
	if err != nil {
		return ledger.Tx{}, err
	}
	rec, aerr := s.c.Get(s.read, k)
	if isNotFound(aerr) {
		return ledger.Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if aerr != nil {
		return ledger.Tx{}, aerr
	}
	return TxFromBins(address, rec.Bins)
}

// Chain implements ledger.Store: batch gets of chain entries, window by
// window, until the first missing index.
func (s *Store) Chain(ctx context.Context, genesis []byte, fn func(ledger.Tx) bool) error {
	keys := make([]*as.Key, chainWindow)
	addrs := make([][]byte, 0, chainWindow)
	for start := uint64(0); ; start += chainWindow {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range keys {
			k, err := ChainKey(s.ns, genesis, start+uint64(i))
			if err != nil {
				return err
			}
			keys[i] = k
		}
		recs, berr := s.c.BatchGet(s.batch, keys, binAddr)
		if berr != nil && !berr.Matches(types.KEY_NOT_FOUND_ERROR, types.BATCH_FAILED) {
			return berr
		}
		addrs = addrs[:0]
		for _, r := range recs {
			if r == nil {
				break
			}
			a, ok := r.Bins[binAddr].([]byte)
			if !ok {
				return fmt.Errorf("chain %x entry %d: bin addr is a %T", genesis, start+uint64(len(addrs)), r.Bins[binAddr])
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			return nil
		}
		txKeys := make([]*as.Key, len(addrs))
		for i, a := range addrs {
			k, err := TxKey(s.ns, a)
			if err != nil {
				return err
			}
			txKeys[i] = k
		}
		txs, berr := s.c.BatchGet(s.batch, txKeys)
		if berr != nil && !berr.Matches(types.KEY_NOT_FOUND_ERROR, types.BATCH_FAILED) {
			return berr
		}
		for i, r := range txs {
			if r == nil {
				return fmt.Errorf("chain %x entry %d: transaction %x: %w", genesis, start+uint64(i), addrs[i], kv.ErrNotFound)
			}
			tx, err := TxFromBins(addrs[i], r.Bins)
			if err != nil {
				return err
			}
			if !fn(tx) {
				return nil
			}
		}
		if len(addrs) < chainWindow {
			return nil
		}
	}
}

// PutBalances implements ledger.Store: batch writes.
func (s *Store) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	for i := 0; i < len(addrs); i += balanceBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := min(i+balanceBatch, len(addrs))
		recs := make([]as.BatchRecordIfc, 0, j-i)
		for k := i; k < j; k++ {
			key, err := BalanceKey(s.ns, addrs[k])
			if err != nil {
				return err
			}
			recs = append(recs, as.NewBatchWrite(s.batchWrite, key, as.PutOp(as.NewBin(binAmount, int64(amounts[k])))))
		}
		if err := s.batchOperate(recs); err != nil {
			return err
		}
	}
	return nil
}

// GetBalance implements ledger.Store.
func (s *Store) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	k, err := BalanceKey(s.ns, address)
	if err != nil {
		return 0, err
	}
	rec, aerr := s.c.Get(s.read, k, binAmount)
	if isNotFound(aerr) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	if aerr != nil {
		return 0, aerr
	}
	v, err := intBin(rec.Bins, binAmount)
	return uint64(v), err
}

// Init implements ycsb.DB: it truncates the usertable set.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fieldCount < 1 {
		return fmt.Errorf("ycsb: %d fields", fieldCount)
	}
	if err := s.c.Truncate(nil, s.ns, setYCSB, nil); err != nil {
		return err
	}
	s.fieldsMu.Lock()
	s.fieldNames = FieldNames(fieldCount)
	s.fieldsMu.Unlock()
	return nil
}

func (s *Store) names() ([]string, error) {
	s.fieldsMu.RLock()
	n := s.fieldNames
	s.fieldsMu.RUnlock()
	if n == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return n, nil
}

func (s *Store) ycsbKey(key []byte) (*as.Key, error) {
	k, err := as.NewKey(s.ns, setYCSB, string(key))
	return k, asError(err)
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	return s.put(ctx, s.write, key, fields)
}

// Update implements ycsb.DB: writes only the non-nil fields' bins
// (UPDATE_ONLY: a missing record is kv.ErrNotFound).
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	return s.put(ctx, s.updateOnly, key, fields)
}

func (s *Store) put(ctx context.Context, p *as.WritePolicy, key []byte, fields [][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := s.names()
	if err != nil {
		return err
	}
	bins, err := FieldBins(names, fields)
	if err != nil || len(bins) == 0 {
		return err
	}
	k, err := s.ycsbKey(key)
	if err != nil {
		return err
	}
	aerr := s.c.PutBins(p, k, bins...)
	if isNotFound(aerr) {
		return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return asError(aerr)
}

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	k, err := s.ycsbKey(key)
	if err != nil {
		return nil, err
	}
	rec, aerr := s.c.Get(s.read, k)
	if isNotFound(aerr) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if aerr != nil {
		return nil, aerr
	}
	return FieldsFromBins(names, rec.Bins)
}
