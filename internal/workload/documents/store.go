// Package documents is the mongodb-performance-test shaped workload
// (github.com/idealo/mongodb-performance-test, the tool of seed 003):
// documents of the tool's shape, inserted one by one, found, updated and
// deleted one at a time by their indexed _id, by a number of threads, on
// several collections. It runs on every target that keeps documents
// (Store): MongoDB-protocol servers (FerretDB on SQLite or PostgreSQL,
// or any mongodb:// URI), PostgreSQL with jsonb and SQLite with its JSON
// functions. Its report prints what the tool prints (Dropwizard Metrics'
// timer: count, mean and 1-, 5-, 15-minute rates, and the latency
// distribution), with the HDR percentiles beside it.
package documents

import "context"

// Field names of a document, as the tool writes them.
const (
	FieldID             = "_id"
	FieldThreadID       = "threadId"
	FieldThreadRunCount = "threadRunCount"
	FieldRnd            = "rnd"
	FieldText           = "rndTxt"
	FieldVersion        = "v"
)

// Doc is one document of the tool's shape:
//
//	{_id: long, threadId: int, threadRunCount: long, rnd: long, [rndTxt: string], v: int}
//
// _id is the queried (indexed) field of the *_one modes; rndTxt is
// present only when the text size is not 0.
type Doc struct {
	ID             int64
	ThreadID       int32
	ThreadRunCount int64
	Rnd            int64
	Text           string
	V              int32
}

// Store is what a target offers the documents workload: collections of
// Docs with an ascending index on _id. Every method is safe for
// concurrent use.
type Store interface {
	// PrepareDocuments drops the named collections and creates them
	// empty with an ascending index on _id (the tool indexes the queried
	// field before it runs). It returns the index as the report states it.
	PrepareDocuments(ctx context.Context, colls []string) (index string, err error)
	// InsertDocuments writes a batch of new documents (the load).
	InsertDocuments(ctx context.Context, coll string, docs []Doc) error
	// InsertDocument writes one new document (insertOne).
	InsertDocument(ctx context.Context, coll string, d *Doc) error
	// FindDocuments finds the documents whose _id is id and iterates
	// them into fn (find({_id: id}) and its cursor); it returns how many
	// there were.
	FindDocuments(ctx context.Context, coll string, id int64, fn func(*Doc) error) (int64, error)
	// UpdateDocument sets rnd and increments v of the document with this
	// _id (updateOne({_id}, {$set: {rnd}, $inc: {v: 1}})) and returns how
	// many documents were modified.
	UpdateDocument(ctx context.Context, coll string, id, rnd int64) (int64, error)
	// DeleteDocument deletes the document with this _id (deleteOne) and
	// returns how many were deleted.
	DeleteDocument(ctx context.Context, coll string, id int64) (int64, error)
	// DocumentStats returns a collection's document count and its
	// highest _id (0 when empty).
	DocumentStats(ctx context.Context, coll string) (count, maxID int64, err error)
	// DocumentIndexes describes the indexes of a collection, one line
	// each, naming the indexed fields (so "_id" appears in the line of an
	// index on _id).
	DocumentIndexes(ctx context.Context, coll string) ([]string, error)
}
