package ledger

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
	"storebench/internal/workload/layout"
)

// The ledger layout on a MongoDB-protocol target (conn.Mongo: MongoDB,
// FerretDB), in the target's database: collections txs (with the chain
// index, created if missing) and balances, keyed by address, documents
// built as raw BSON, and the Store methods.

const (
	chainBatch = 1000
)

// The target's Reset empties the ledger's collections.
func init() { conn.AddOwnTables("txs", "balances") }

// mongoStore is the ledger layout on one database.
type mongoStore struct {
	binaryIDs     bool // addresses as binary _id rather than hex strings
	txs, balances *mongo.Collection

	mu    sync.Mutex
	ready bool // the chain index exists
}

// mongoStores holds each database's layout, so that the steps of a run on
// one handle create the index once (*mongo.Database -> *mongoStore).
var mongoStores layout.PerHandle[*mongo.Database, *mongoStore]

// mongoStoreOf is the ledger layout on h, the same for every step on it.
func mongoStoreOf(h conn.Mongo) *mongoStore {
	db := h.MongoDatabase()
	return mongoStores.Of(db, func() *mongoStore {
		b, _ := h.(conn.MongoBinaryIDs)
		return &mongoStore{binaryIDs: b != nil && b.MongoBinaryIDs(), txs: db.Collection("txs"), balances: db.Collection("balances")}
	})
}

// prepare creates the index Chain reads through, if it is missing (once
// per database; again after a failure).
func (s *mongoStore) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	_, err := s.txs.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "genesis", Value: 1}, {Key: "idx", Value: 1}},
		Options: options.Index().SetName("chain"),
	})
	if err != nil {
		return fmt.Errorf("creating the chain index: %w", err)
	}
	s.ready = true
	return nil
}

// mongoUnindexed is the layout without the chain index (chains.index
// false): the index is not created, so inserts maintain only _id.
type mongoUnindexed struct{ *mongoStore }

func (s *mongoStore) withoutChainIndex() Store { return mongoUnindexed{s} }

// prepare creates nothing: the collections are made by the first insert.
func (mongoUnindexed) prepare(context.Context) error { return nil }

// Chain implements Store: without its index a chain is a scan.
func (mongoUnindexed) Chain(context.Context, []byte, func(Tx) bool) error { return errNoChainIndex }

// appendAddressID appends the _id element of an address: its hex string
// by default (FerretDB finds string _ids through its primary key, binary
// ones only by scanning), or the 32 bytes as binary (option
// address_id=binary, the natural choice on MongoDB itself).
func (s *mongoStore) appendAddressID(dst, addr []byte) []byte {
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
func (s *mongoStore) idFilter(addr []byte) bson.Raw {
	b := make([]byte, 0, 4+1+4+4+1+2*len(addr)+1)
	i, b := bsoncore.AppendDocumentStart(b)
	b = s.appendAddressID(b, addr)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	return b
}

func txDocSize(tx *Tx) int {
	// document length and terminator; per element type byte, name, NUL;
	// binaries length and subtype; the _id as hex.
	return 5 + 7*2 + len("_id") + len("prev") + len("genesis") + len("idx") + len("ts") + len("type") + len("payload") +
		4*5 + 2*len(tx.Address) + len(tx.Prev) + len(tx.Genesis) + len(tx.Payload) + 8 + 8 + 4
}

func (s *mongoStore) appendTxDoc(dst []byte, tx *Tx) []byte {
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

// PutTxs implements Store.
func (s *mongoStore) PutTxs(ctx context.Context, txs []Tx) error {
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

// GetTx implements Store.
func (s *mongoStore) GetTx(ctx context.Context, address []byte) (Tx, error) {
	raw, err := s.txs.FindOne(ctx, s.idFilter(address)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return Tx{}, err
	}
	return txFromDoc(bsoncore.Document(raw))
}

// txFromDoc copies a transaction out of its document, into one
// allocation.
func txFromDoc(doc bsoncore.Document) (Tx, error) {
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
		return Tx{}, err
	}
	var buf [32]byte // the address, decoded on the stack: copyTx copies it
	addr, err := addressFromID(buf[:0], doc.Lookup("_id"))
	if err != nil {
		return Tx{}, err
	}
	return copyTx(Tx{Address: addr, Prev: prev, Genesis: gen, Payload: payload, Index: uint64(idx), Timestamp: ts, Type: uint8(typ)}), nil
}

var chainSort = bson.D{{Key: "idx", Value: 1}}

// Chain implements Store: one indexed find, sorted by idx.
func (s *mongoStore) Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error {
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

// PutBalances implements Store.
func (s *mongoStore) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
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

// GetBalance implements Store.
func (s *mongoStore) GetBalance(ctx context.Context, address []byte) (uint64, error) {
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
