package mongodb

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Reset empties the ledger collections (keeping their indexes), for a
// fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	if _, err := s.txs.DeleteMany(ctx, bson.D{}); err != nil {
		return err
	}
	_, err := s.balances.DeleteMany(ctx, bson.D{})
	return err
}
