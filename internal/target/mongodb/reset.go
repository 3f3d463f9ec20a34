package mongodb

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Reset empties every collection of the database (what storebench wrote,
// keeping their indexes), for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, "system.") {
			continue
		}
		if _, err := s.db.Collection(n).DeleteMany(ctx, bson.D{}); err != nil {
			return err
		}
	}
	return nil
}
