// Package mongodb is the storebench target for MongoDB-protocol servers,
// through the official Go driver (v2). The managed server is FerretDB
// (MongoDB itself cannot be installed here); an external mongod works the
// same through a URI.
//
// Layouts, in the URI's database (storebench by default):
//
//	ledger  txs       {_id: address, prev, genesis (binary), idx, ts (int64),
//	                   type (int32), payload (binary)}, index {genesis: 1, idx: 1}
//	        balances  {_id: address, amount (int64, the uint64's bits)}
//	ycsb    usertable {_id: key (string), field0 … (binary)}
//
// An address _id is its hex string by default: FerretDB 1.x (SQLite)
// finds a document by _id through its primary key only for string and
// ObjectID ids, and scans the whole collection for a binary one, which
// would make every GetTx a full scan. Option address_id=binary stores the
// 32 bytes as binary, the natural choice on MongoDB itself.
//
// Documents are built as raw BSON into one buffer per call (no maps, no
// reflection) and read back with raw lookups. PutTxs is one unordered
// InsertMany; transactions already present (a ladder re-inserts the first
// N) are then replaced, upserted by _id. Without multi-document
// transactions (a standalone server has none) a batch is not atomic:
// each document is.
//
// Durability is the write concern: Sync writes with {w: 1, j: true} (the
// server acknowledges once the write is in its journal), Async with
// {w: 1, j: false}.
package mongodb

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/workload/ledger"
)

// moduleVersion is the driver release in go.mod (the test checks it).
const moduleVersion = "v2.9.3"

const (
	name        = "mongodb"
	defaultPool = 16
	defaultDB   = "storebench"
	openTimeout = 3 * time.Second
	chainBatch  = 1000
)

var optionNames = []string{"pool", "address_id"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "MongoDB protocol",
		Version:     "mongo-go-driver " + moduleVersion,
		OptionNames: optionNames,
		Server:      "ferretdb",
		Schemes:     []string{"mongodb"},
		Provides:    target.Caps{target.KeyValue, target.OrderedScan, target.Secondary, target.Documents},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := Open(o)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}

// Store is an open client. It implements ledger.Store, ycsb.DB and
// ycsb.Scanner and is safe for concurrent use.
type Store struct {
	binaryIDs          bool // addresses as binary _id rather than hex strings
	client             *mongo.Client
	db                 *mongo.Database
	txs, balances, ycs *mongo.Collection
	settings           map[string]string

	fieldsMu sync.RWMutex
	fields   []string
}

// Open connects to o.URI (mongodb://[user:password@]host:port/db) and
// creates the ledger index if it is missing.
func Open(o target.Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, defaultPool, "mongodb://host:port/db")
	if err != nil {
		return nil, err
	}
	isSync, extra, pool := sv.Sync, sv.Extra, sv.Pool
	idType, err := extra.Choice("address_id", "hex", "hex", "binary")
	if err != nil {
		return nil, err
	}
	dbName := database(o.URI)
	journal := isSync
	wc := &writeconcern.WriteConcern{W: 1, Journal: &journal}
	opts := options.Client().ApplyURI(o.URI).
		SetServerSelectionTimeout(openTimeout).
		SetConnectTimeout(openTimeout).
		SetMaxPoolSize(uint64(pool)).
		SetMinPoolSize(0).
		SetWriteConcern(wc).
		SetReadPreference(readpref.Primary()).
		SetAppName("storebench")
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	// The driver notices the deadline only between handshake attempts,
	// each bounded by the connect timeout: against a silent server the
	// ping can take twice openTimeout. Bound it here.
	pinged := make(chan error, 1)
	go func() { pinged <- client.Ping(ctx, readpref.Primary()) }()
	select {
	case err := <-pinged:
		if err != nil {
			abandon(client)
			return nil, err
		}
	case <-time.After(openTimeout + 250*time.Millisecond):
		go abandon(client)
		return nil, fmt.Errorf("no answer to a ping within %s", openTimeout)
	}
	db := client.Database(dbName)
	s := &Store{binaryIDs: idType == "binary", client: client, db: db,
		txs: db.Collection("txs"), balances: db.Collection("balances"), ycs: db.Collection("usertable")}
	_, err = s.txs.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "genesis", Value: 1}, {Key: "idx", Value: 1}},
		Options: options.Index().SetName("chain"),
	})
	if err != nil {
		abandon(client)
		return nil, fmt.Errorf("creating the chain index: %w", err)
	}
	version, ferret, note := "unknown", false, ""
	var info struct {
		Version         string `bson:"version"`
		FerretDBVersion string `bson:"ferretdbVersion"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err == nil {
		version = info.Version
		ferret = info.FerretDBVersion != ""
		switch info.FerretDBVersion {
		case "":
		case "unknown":
			version = "FerretDB (reports MongoDB " + info.Version + ")"
		default:
			version = "FerretDB " + info.FerretDBVersion + " (reports MongoDB " + info.Version + ")"
		}
	}
	if ferret {
		note = "FerretDB 1.x on SQLite uses an index only for _id equality on strings and ObjectIDs: other filters, sorts and ranges scan the collection"
	}
	s.settings = map[string]string{
		"server":         target.RedactURI(o.URI),
		"server_version": version,
		"client":         "mongo-go-driver " + moduleVersion + " (raw BSON documents)",
		"durability":     fmt.Sprintf("write concern {w: 1, j: %t}", journal),
		"write_concern":  fmt.Sprintf("w:1 j:%t", journal),
		"pool":           fmt.Sprintf("%d connections (MaxPoolSize)", pool),
		"database":       dbName,
		"layout.ledger":  "txs {_id: address (" + idType + "), prev, genesis bin, idx, ts int64, type int32, payload bin} + index {genesis:1, idx:1}; balances {_id: address (" + idType + "), amount int64}",
		"address_id":     idType,
		"layout.ycsb":    "usertable {_id: key string, field0..fieldN-1 bin}",
		"batch":          "PutTxs, PutBalances: one unordered InsertMany; documents already present are then replaced (upsert by _id); not atomic across documents (no multi-document transaction)",
		"chain_read":     fmt.Sprintf("find {genesis} sorted by idx, batches of %d", chainBatch),
	}
	if note != "" {
		s.settings["server_note"] = note
	}
	return s, nil
}

// database is the database a mongodb:// URI names (its path), or
// storebench. The URI may list several hosts, which net/url rejects.
func database(uri string) string {
	_, rest, _ := strings.Cut(uri, "://")
	rest, _, _ = strings.Cut(rest, "?")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	_, path, _ := strings.Cut(rest, "/")
	if path == "" {
		return defaultDB
	}
	if db, err := url.PathUnescape(path); err == nil {
		return db
	}
	return path
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close disconnects.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.client.Disconnect(ctx)
}

// appendAddressID appends the _id element of an address: its hex string
// by default (FerretDB finds string _ids through its primary key, binary
// ones only by scanning), or the 32 bytes as binary (option
// address_id=binary, the natural choice on MongoDB itself).
func (s *Store) appendAddressID(dst, addr []byte) []byte {
	if s.binaryIDs {
		return bsoncore.AppendBinaryElement(dst, "_id", 0, addr)
	}
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeString, "_id")
	dst = binary.LittleEndian.AppendUint32(dst, uint32(2*len(addr)+1))
	dst = hex.AppendEncode(dst, addr)
	return append(dst, 0)
}

// addressFromID appends the address an _id holds to dst.
func addressFromID(dst []byte, v bsoncore.Value) ([]byte, error) {
	switch v.Type {
	case bsoncore.TypeBinary:
		_, b, ok := v.BinaryOK()
		if ok {
			return append(dst, b...), nil
		}
	case bsoncore.TypeString:
		if len(v.Data) >= 5 {
			return hex.AppendDecode(dst, v.Data[4:len(v.Data)-1])
		}
	}
	return nil, fmt.Errorf("_id of type %v is not an address", v.Type)
}

// idFilter is {_id: address} as raw BSON.
func (s *Store) idFilter(addr []byte) bson.Raw {
	b := make([]byte, 0, 4+1+4+4+1+2*len(addr)+1)
	i, b := bsoncore.AppendDocumentStart(b)
	b = s.appendAddressID(b, addr)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	return b
}

// stringIDFilter is {_id: id} with a string _id, as raw BSON.
func stringIDFilter(id []byte) bson.Raw {
	b := make([]byte, 0, 4+1+4+4+len(id)+2)
	i, b := bsoncore.AppendDocumentStart(b)
	b = bsoncore.AppendStringElement(b, "_id", string(id))
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	return b
}

func txDocSize(tx *ledger.Tx) int {
	// document length and terminator; per element type byte, name, NUL;
	// binaries length and subtype; the _id as hex.
	return 5 + 7*2 + len("_id") + len("prev") + len("genesis") + len("idx") + len("ts") + len("type") + len("payload") +
		4*5 + 2*len(tx.Address) + len(tx.Prev) + len(tx.Genesis) + len(tx.Payload) + 8 + 8 + 4
}

func (s *Store) appendTxDoc(dst []byte, tx *ledger.Tx) []byte {
	i, dst := bsoncore.AppendDocumentStart(dst)
	dst = s.appendAddressID(dst, tx.Address)
	dst = bsoncore.AppendBinaryElement(dst, "prev", 0, tx.Prev)
	dst = bsoncore.AppendBinaryElement(dst, "genesis", 0, tx.Genesis)
	dst = bsoncore.AppendInt64Element(dst, "idx", int64(tx.Index))
	dst = bsoncore.AppendInt64Element(dst, "ts", tx.Timestamp)
	dst = bsoncore.AppendInt32Element(dst, "type", int32(tx.Type))
	dst = bsoncore.AppendBinaryElement(dst, "payload", 0, tx.Payload)
	dst, _ = bsoncore.AppendDocumentEnd(dst, i)
	return dst
}

// insertOrReplace inserts docs (unordered); those whose _id exists
// already are then replaced, upserted by _id.
func insertOrReplace(ctx context.Context, c *mongo.Collection, docs []bson.Raw) error {
	_, err := c.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return err
	}
	models := make([]mongo.WriteModel, 0, len(bwe.WriteErrors))
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 || we.Index < 0 || we.Index >= len(docs) {
			return err
		}
		doc := docs[we.Index]
		id, ierr := doc.LookupErr("_id")
		if ierr != nil {
			return err
		}
		models = append(models, mongo.NewReplaceOneModel().
			SetFilter(bson.D{{Key: "_id", Value: id}}).SetReplacement(doc).SetUpsert(true))
	}
	_, err = c.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return err
}

// PutTxs implements ledger.Store.
func (s *Store) PutTxs(ctx context.Context, txs []ledger.Tx) error {
	if len(txs) == 0 {
		return nil
	}
	size := 0
	for i := range txs {
		size += txDocSize(&txs[i])
	}
	slab := make([]byte, 0, size)
	ends := make([]int, len(txs))
	for i := range txs {
		slab = s.appendTxDoc(slab, &txs[i])
		ends[i] = len(slab)
	}
	docs := make([]bson.Raw, len(txs))
	start := 0
	for i, end := range ends {
		docs[i] = slab[start:end:end]
		start = end
	}
	return insertOrReplace(ctx, s.txs, docs)
}

// GetTx implements ledger.Store.
func (s *Store) GetTx(ctx context.Context, address []byte) (ledger.Tx, error) {
	raw, err := s.txs.FindOne(ctx, s.idFilter(address)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return ledger.Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return ledger.Tx{}, err
	}
	return txFromDoc(bsoncore.Document(raw))
}

// txFromDoc copies a transaction out of its document, into one
// allocation.
func txFromDoc(doc bsoncore.Document) (ledger.Tx, error) {
	bin := func(key string) ([]byte, error) {
		_, b, ok := doc.Lookup(key).BinaryOK()
		if !ok {
			return nil, fmt.Errorf("document field %s is not binary", key)
		}
		return b, nil
	}
	num := func(key string) (int64, error) {
		v, ok := doc.Lookup(key).AsInt64OK()
		if !ok {
			return 0, fmt.Errorf("document field %s is not a number", key)
		}
		return v, nil
	}
	prev, err2 := bin("prev")
	gen, err3 := bin("genesis")
	payload, err4 := bin("payload")
	idx, err5 := num("idx")
	ts, err6 := num("ts")
	typ, err7 := num("type")
	if err := errors.Join(err2, err3, err4, err5, err6, err7); err != nil {
		return ledger.Tx{}, err
	}
	b := make([]byte, 0, 32+len(prev)+len(gen)+len(payload))
	b, err := addressFromID(b, doc.Lookup("_id"))
	if err != nil {
		return ledger.Tx{}, err
	}
	a, p, g := len(b), len(prev), len(gen)
	b = append(b, prev...)
	b = append(b, gen...)
	b = append(b, payload...)
	n := len(b)
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

var chainSort = bson.D{{Key: "idx", Value: 1}}

// Chain implements ledger.Store: one indexed find, sorted by idx.
func (s *Store) Chain(ctx context.Context, genesis []byte, fn func(ledger.Tx) bool) error {
	b := make([]byte, 0, 4+1+8+4+1+len(genesis)+1)
	i, b := bsoncore.AppendDocumentStart(b)
	b = bsoncore.AppendBinaryElement(b, "genesis", 0, genesis)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	cur, err := s.txs.Find(ctx, bson.Raw(b), options.Find().SetSort(chainSort).SetBatchSize(chainBatch))
	if err != nil {
		return err
	}
	defer cur.Close(context.Background())
	for cur.Next(ctx) {
		tx, err := txFromDoc(bsoncore.Document(cur.Current))
		if err != nil {
			return fmt.Errorf("chain %x: %w", genesis, err)
		}
		if !fn(tx) {
			return nil
		}
	}
	return cur.Err()
}

// PutBalances implements ledger.Store.
func (s *Store) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	if len(addrs) == 0 {
		return nil
	}
	size := 0
	for _, a := range addrs {
		size += 5 + 2 + len("_id") + len("amount") + 2 + 5 + 2*len(a) + 8
	}
	slab := make([]byte, 0, size)
	ends := make([]int, len(addrs))
	for k, a := range addrs {
		var i int32
		i, slab = bsoncore.AppendDocumentStart(slab)
		slab = s.appendAddressID(slab, a)
		slab = bsoncore.AppendInt64Element(slab, "amount", int64(amounts[k]))
		slab, _ = bsoncore.AppendDocumentEnd(slab, i)
		ends[k] = len(slab)
	}
	docs := make([]bson.Raw, len(addrs))
	start := 0
	for k, end := range ends {
		docs[k] = slab[start:end:end]
		start = end
	}
	return insertOrReplace(ctx, s.balances, docs)
}

// GetBalance implements ledger.Store.
func (s *Store) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	raw, err := s.balances.FindOne(ctx, s.idFilter(address)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	v, ok := bsoncore.Document(raw).Lookup("amount").AsInt64OK()
	if !ok {
		return 0, fmt.Errorf("balance of %x: amount is not a number", address)
	}
	return uint64(v), nil
}

// Init implements ycsb.DB: it drops usertable.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	if err := s.ycs.Drop(ctx); err != nil {
		return err
	}
	names := make([]string, fieldCount)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	s.fieldsMu.Lock()
	s.fields = names
	s.fieldsMu.Unlock()
	return nil
}

func (s *Store) fieldNames() ([]string, error) {
	s.fieldsMu.RLock()
	f := s.fields
	s.fieldsMu.RUnlock()
	if f == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return f, nil
}

// Insert implements ycsb.DB: one raw document.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	names, err := s.fieldNames()
	if err != nil {
		return err
	}
	if len(fields) != len(names) {
		return fmt.Errorf("ycsb: %d fields, records have %d", len(fields), len(names))
	}
	size := 5 + 6 + 4 + len(key) + 1
	for i, f := range fields {
		size += 2 + len(names[i]) + 5 + len(f)
	}
	b := make([]byte, 0, size)
	i, b := bsoncore.AppendDocumentStart(b)
	b = bsoncore.AppendStringElement(b, "_id", string(key))
	for j, f := range fields {
		b = bsoncore.AppendBinaryElement(b, names[j], 0, f)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	_, err = s.ycs.InsertOne(ctx, bson.Raw(b))
	return err
}

// Update implements ycsb.DB: one $set of the non-nil fields.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	names, err := s.fieldNames()
	if err != nil {
		return err
	}
	if len(fields) > len(names) {
		return fmt.Errorf("ycsb: %d fields, records have %d", len(fields), len(names))
	}
	size := 5 + 2 + len("$set") + 5
	n := 0
	for i, f := range fields {
		if f != nil {
			size += 2 + len(names[i]) + 5 + len(f)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	b := make([]byte, 0, size)
	i, b := bsoncore.AppendDocumentStart(b)
	var j int32
	j, b = bsoncore.AppendDocumentElementStart(b, "$set")
	for k, f := range fields {
		if f != nil {
			b = bsoncore.AppendBinaryElement(b, names[k], 0, f)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, j)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	res, err := s.ycs.UpdateOne(ctx, stringIDFilter(key), bson.Raw(b))
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return nil
}

// fieldsFromDoc copies a record's fields out of its document, into one
// allocation.
func fieldsFromDoc(doc bsoncore.Document, names []string) ([][]byte, error) {
	vals := make([][]byte, len(names))
	n := 0
	for i, name := range names {
		_, b, ok := doc.Lookup(name).BinaryOK()
		if !ok {
			return nil, fmt.Errorf("field %s is not binary", name)
		}
		vals[i] = b
		n += len(b)
	}
	slab := make([]byte, 0, n)
	for i, v := range vals {
		start := len(slab)
		slab = append(slab, v...)
		vals[i] = slab[start:len(slab):len(slab)]
	}
	return vals, nil
}

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	names, err := s.fieldNames()
	if err != nil {
		return nil, err
	}
	raw, err := s.ycs.FindOne(ctx, stringIDFilter(key)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return fieldsFromDoc(bsoncore.Document(raw), names)
}

var idSort = bson.D{{Key: "_id", Value: 1}}

// Scan implements ycsb.Scanner: count records from start in _id order.
func (s *Store) Scan(ctx context.Context, start []byte, count int, fn func(key []byte, fields [][]byte) bool) error {
	names, err := s.fieldNames()
	if err != nil {
		return err
	}
	b := make([]byte, 0, 32+len(start))
	i, b := bsoncore.AppendDocumentStart(b)
	var j int32
	j, b = bsoncore.AppendDocumentElementStart(b, "_id")
	b = bsoncore.AppendStringElement(b, "$gte", string(start))
	b, _ = bsoncore.AppendDocumentEnd(b, j)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	cur, err := s.ycs.Find(ctx, bson.Raw(b), options.Find().SetSort(idSort).SetLimit(int64(count)).SetBatchSize(int32(min(count, 1000))))
	if err != nil {
		return err
	}
	defer cur.Close(context.Background())
	for cur.Next(ctx) {
		doc := bsoncore.Document(cur.Current)
		id, ok := doc.Lookup("_id").StringValueOK()
		if !ok {
			return errors.New("record with a non-string _id")
		}
		f, err := fieldsFromDoc(doc, names)
		if err != nil {
			return fmt.Errorf("record %q: %w", id, err)
		}
		if !fn([]byte(id), f) {
			return nil
		}
	}
	return cur.Err()
}

// abandon disconnects a client whose open failed without waiting long:
// against a silent server, a clean Disconnect waits for the driver's
// in-flight handshakes and would stretch the one-line failure the user
// waits for past its promised 5 s.
func abandon(c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = c.Disconnect(ctx)
}
