package mongodb

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"storebench/internal/target/conn"
)

// Reset empties the collections of the database that the workloads keep
// (conn.OwnTables), keeping their indexes, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	own := conn.OwnTables()
	for _, n := range names {
		if !slices.Contains(own, n) {
			continue
		}
		if _, err := s.db.Collection(n).DeleteMany(ctx, bson.D{}); err != nil {
			return err
		}
	}
	return nil
}
