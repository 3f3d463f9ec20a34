package mongodb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"storebench/internal/target"
	"storebench/internal/target/conn"
)

// Reset empties the collections of the database that the workloads keep
// (conn.OwnTables), keeping their indexes, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	own := ownCollections()
	for _, n := range names {
		if !slices.Contains(own, n) {
			continue
		}
		if err := emptyCollection(ctx, s.db.Collection(n)); err != nil {
			return fmt.Errorf("emptying collection %s: %w", n, err)
		}
	}
	return nil
}

// resetBatch is how many documents one delete of Reset names. FerretDB
// on SQLite deletes what a filter matched as one statement with a
// variable per document, and SQLite refuses more than 32766 variables:
// a delete of every document of a collection of 1e5 fails there ("too
// many SQL variables"), so Reset deletes the documents by their _id, this
// many at a time.
const resetBatch = 10000

// emptyCollection deletes every document of c, resetBatch _ids per
// delete, until a find returns none.
func emptyCollection(ctx context.Context, c *mongo.Collection) error {
	find := options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(resetBatch)
	for {
		cur, err := c.Find(ctx, bson.D{}, find)
		if err != nil {
			return err
		}
		var docs []struct {
			ID any `bson:"_id"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			return err
		}
		if len(docs) == 0 {
			return nil
		}
		ids := make(bson.A, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		res, err := c.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil {
			return err
		}
		if res.DeletedCount == 0 {
			return fmt.Errorf("%d documents found but none deleted", len(docs))
		}
	}
}

// ownCollections are the collections storebench keeps: the workloads'
// (conn.OwnTables) and this target's YCSB layout's.
func ownCollections() []string { return append(conn.OwnTables(), "usertable") }

// Occupancy implements target.Occupant: the database's collections that
// are not storebench's (system ones aside), and how many of storebench's
// own hold documents.
func (s *Store) Occupancy(ctx context.Context) (target.Occupancy, error) {
	own := ownCollections()
	o := target.Occupancy{Unit: "collections", OwnNames: own}
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return o, err
	}
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "system."):
		case !slices.Contains(own, n):
			o.Foreign++
		default:
			c, err := s.db.Collection(n).EstimatedDocumentCount(ctx)
			if err != nil {
				return o, err
			}
			if c > 0 {
				o.Own++
			}
		}
	}
	return o, nil
}

// Cleanup implements target.Cleaner: it drops storebench's own
// collections, at the end of a run on a server named by URI, and nothing
// else of the database.
func (s *Store) Cleanup(ctx context.Context) error {
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	own := ownCollections()
	for _, n := range names {
		if slices.Contains(own, n) {
			if err := s.db.Collection(n).Drop(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
