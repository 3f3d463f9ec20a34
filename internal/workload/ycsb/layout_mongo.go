package ycsb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
)

// The YCSB layout on a MongoDB database (conn.Mongo: MongoDB, FerretDB):
// collection usertable, one document per record with a string _id and a
// binary field per YCSB field, and the DB and Scanner methods. It was
// the mongodb target's own; it needs nothing but the target's database,
// so it lives with the workload.
//
//	usertable {_id: key (string), field0 … (binary)}

// MongoDB runs YCSB on a MongoDB database.
type MongoDB struct {
	c *mongo.Collection // usertable

	// fields are the field names Init set: read on every operation
	// without a lock (an atomic load, as CQLDB's statements).
	fields atomic.Pointer[[]string]
}

// mongoDBs holds each Mongo handle's layout, so that the steps of a run
// on one handle share the field names Init set (conn.Mongo -> *MongoDB).
var mongoDBs sync.Map

// mongoDBOf is the YCSB layout on m, the same for every step on it.
func mongoDBOf(m conn.Mongo) *MongoDB {
	if s, ok := mongoDBs.Load(m); ok {
		return s.(*MongoDB)
	}
	s, _ := mongoDBs.LoadOrStore(m, &MongoDB{c: m.MongoDatabase().Collection("usertable")})
	return s.(*MongoDB)
}

// mongoIDFilter is {_id: id} with a string _id, as raw BSON.
func mongoIDFilter(id []byte) bson.Raw {
	b := make([]byte, 0, 4+1+4+4+len(id)+2)
	i, b := bsoncore.AppendDocumentStart(b)
	b = bsoncore.AppendStringElement(b, "_id", string(id))
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	return b
}

// Init implements DB: it drops usertable.
func (s *MongoDB) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	if err := s.c.Drop(ctx); err != nil {
		return err
	}
	names := make([]string, fieldCount)
	for i := range names {
		names[i] = "field" + strconv.Itoa(i)
	}
	s.fields.Store(&names)
	return nil
}

func (s *MongoDB) fieldNames() ([]string, error) {
	f := s.fields.Load()
	if f == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return *f, nil
}

// Insert implements DB: one raw document.
func (s *MongoDB) Insert(ctx context.Context, key []byte, fields [][]byte) error {
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
	_, err = s.c.InsertOne(ctx, bson.Raw(b))
	return err
}

// Update implements DB: one $set of the non-nil fields.
func (s *MongoDB) Update(ctx context.Context, key []byte, fields [][]byte) error {
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
	res, err := s.c.UpdateOne(ctx, mongoIDFilter(key), bson.Raw(b))
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

// Read implements DB.
func (s *MongoDB) Read(ctx context.Context, key []byte) ([][]byte, error) {
	names, err := s.fieldNames()
	if err != nil {
		return nil, err
	}
	raw, err := s.c.FindOne(ctx, mongoIDFilter(key)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return fieldsFromDoc(bsoncore.Document(raw), names)
}

var mongoIDSort = bson.D{{Key: "_id", Value: 1}}

// Scan implements Scanner: count records from start in _id order.
func (s *MongoDB) Scan(ctx context.Context, start []byte, count int, fn func(key []byte, fields [][]byte) bool) error {
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
	cur, err := s.c.Find(ctx, bson.Raw(b), options.Find().SetSort(mongoIDSort).SetLimit(int64(count)).SetBatchSize(int32(min(count, 1000))))
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
