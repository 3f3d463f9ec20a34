package mongodb

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

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
		if _, err := s.db.Collection(n).DeleteMany(ctx, bson.D{}); err != nil {
			return err
		}
	}
	return nil
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
