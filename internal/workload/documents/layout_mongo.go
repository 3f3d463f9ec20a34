package documents

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"storebench/internal/target/conn"
)

// The documents layout (mongodb-performance-test's): collections perf1 …
// perfN of documents {_id: int64, threadId: int32, threadRunCount: int64,
// rnd: int64, [rndTxt: string], v: int32}, with the _id index, written
// and read as raw BSON, on a MongoDB-protocol target's database
// (conn.Mongo).

// mongoStore is the documents layout on a MongoDB database.
type mongoStore struct{ db *mongo.Database }

var idAsc = bson.D{{Key: FieldID, Value: 1}}

func docBSON(b []byte, d *Doc) []byte {
	i, b := bsoncore.AppendDocumentStart(b)
	b = bsoncore.AppendInt64Element(b, FieldID, d.ID)
	b = bsoncore.AppendInt32Element(b, FieldThreadID, d.ThreadID)
	b = bsoncore.AppendInt64Element(b, FieldThreadRunCount, d.ThreadRunCount)
	b = bsoncore.AppendInt64Element(b, FieldRnd, d.Rnd)
	if d.Text != "" {
		b = bsoncore.AppendStringElement(b, FieldText, d.Text)
	}
	b = bsoncore.AppendInt32Element(b, FieldVersion, d.V)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	return b
}

// int64IDFilter is {_id: id} as raw BSON.
func int64IDFilter(id int64) bson.Raw {
	b := make([]byte, 0, 18)
	i, b := bsoncore.AppendDocumentStart(b)
	b = bsoncore.AppendInt64Element(b, FieldID, id)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	return b
}

// PrepareDocuments implements Store: drop, create, and ask for
// the ascending _id index as the tool does (createIndex({_id: 1}), which
// MongoDB and FerretDB satisfy with the index every collection has).
func (s mongoStore) PrepareDocuments(ctx context.Context, colls []string) (string, error) {
	for _, c := range colls {
		coll := s.db.Collection(c)
		if err := coll.Drop(ctx); err != nil {
			return "", fmt.Errorf("dropping %s: %w", c, err)
		}
		if err := s.db.CreateCollection(ctx, c); err != nil {
			return "", fmt.Errorf("creating %s: %w", c, err)
		}
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: idAsc}); err != nil {
			return "", fmt.Errorf("createIndex({_id: 1}) on %s: %w", c, err)
		}
	}
	return "createIndex({_id: 1}) before the load: the unique _id_ index every collection has", nil
}

// InsertDocuments implements Store: one ordered InsertMany.
func (s mongoStore) InsertDocuments(ctx context.Context, coll string, docs []Doc) error {
	all := make([]any, len(docs))
	for i := range docs {
		all[i] = bson.Raw(docBSON(nil, &docs[i]))
	}
	_, err := s.db.Collection(coll).InsertMany(ctx, all)
	return err
}

// InsertDocument implements Store: insertOne.
func (s mongoStore) InsertDocument(ctx context.Context, coll string, d *Doc) error {
	_, err := s.db.Collection(coll).InsertOne(ctx, bson.Raw(docBSON(make([]byte, 0, 96+len(d.Text)), d)))
	return err
}

// FindDocuments implements Store: find({_id}) and its cursor.
func (s mongoStore) FindDocuments(ctx context.Context, coll string, id int64, fn func(*Doc) error) (int64, error) {
	cur, err := s.db.Collection(coll).Find(ctx, int64IDFilter(id))
	if err != nil {
		return 0, err
	}
	defer cur.Close(context.Background())
	var n int64
	var d Doc
	for cur.Next(ctx) {
		n++
		if err := decodeDoc(bsoncore.Document(cur.Current), &d); err != nil {
			return n, err
		}
		if err := fn(&d); err != nil {
			return n, err
		}
	}
	return n, cur.Err()
}

func decodeDoc(raw bsoncore.Document, d *Doc) error {
	var ok bool
	*d = Doc{}
	if d.ID, ok = raw.Lookup(FieldID).AsInt64OK(); !ok {
		return errors.New("document without an integer _id")
	}
	d.ThreadID, _ = raw.Lookup(FieldThreadID).Int32OK()
	d.ThreadRunCount, _ = raw.Lookup(FieldThreadRunCount).AsInt64OK()
	d.Rnd, _ = raw.Lookup(FieldRnd).Int64OK()
	d.Text, _ = raw.Lookup(FieldText).StringValueOK()
	d.V, _ = raw.Lookup(FieldVersion).Int32OK()
	return nil
}

// UpdateDocument implements Store: updateOne({_id}, {$set:
// {rnd}, $inc: {v: 1}}).
func (s mongoStore) UpdateDocument(ctx context.Context, coll string, id, rnd int64) (int64, error) {
	b := make([]byte, 0, 64)
	i, b := bsoncore.AppendDocumentStart(b)
	var j int32
	j, b = bsoncore.AppendDocumentElementStart(b, "$set")
	b = bsoncore.AppendInt64Element(b, FieldRnd, rnd)
	b, _ = bsoncore.AppendDocumentEnd(b, j)
	j, b = bsoncore.AppendDocumentElementStart(b, "$inc")
	b = bsoncore.AppendInt32Element(b, FieldVersion, 1)
	b, _ = bsoncore.AppendDocumentEnd(b, j)
	b, _ = bsoncore.AppendDocumentEnd(b, i)
	res, err := s.db.Collection(coll).UpdateOne(ctx, int64IDFilter(id), bson.Raw(b))
	if err != nil {
		return 0, err
	}
	return res.ModifiedCount, nil
}

// DeleteDocument implements Store: deleteOne({_id}).
func (s mongoStore) DeleteDocument(ctx context.Context, coll string, id int64) (int64, error) {
	res, err := s.db.Collection(coll).DeleteOne(ctx, int64IDFilter(id))
	if err != nil {
		return 0, err
	}
	return res.DeletedCount, nil
}

// DocumentStats implements Store: countDocuments and the
// highest _id (the tool's max query).
func (s mongoStore) DocumentStats(ctx context.Context, coll string) (int64, int64, error) {
	c := s.db.Collection(coll)
	n, err := c.CountDocuments(ctx, bson.D{})
	if err != nil {
		return 0, 0, err
	}
	raw, err := c.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: FieldID, Value: -1}})).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return n, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	id, ok := bsoncore.Document(raw).Lookup(FieldID).AsInt64OK()
	if !ok {
		return 0, 0, fmt.Errorf("%s holds a document without an integer _id", coll)
	}
	return n, id, nil
}

// DocumentIndexes implements Store: listIndexes.
func (s mongoStore) DocumentIndexes(ctx context.Context, coll string) ([]string, error) {
	cur, err := s.db.Collection(coll).Indexes().List(ctx)
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.Background())
	var out []string
	for cur.Next(ctx) {
		name, _ := cur.Current.Lookup("name").StringValueOK()
		out = append(out, name+" "+cur.Current.Lookup("key").String())
	}
	return out, cur.Err()
}

// The collections perf1 … perf100 (params.collections).
func init() {
	for i := 1; i <= 100; i++ {
		conn.AddOwnTables("perf" + strconv.Itoa(i))
	}
}
