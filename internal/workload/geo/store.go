package geo

import (
	"context"
	"time"
)

// Store is what a target offers the geo workload: its own layout of GPS
// points. Every method is safe for concurrent use (the GC pass runs
// beside the ingest).
type Store interface {
	// PrepareGeo drops what an earlier run left and creates the layout
	// empty. It returns the layout as the report states it.
	PrepareGeo(ctx context.Context) (layout string, err error)
	// InsertPoints writes a batch of points (one request of the seed's API).
	InsertPoints(ctx context.Context, pts []Point) error
	// Timeline calls fn with user's points whose timestamps are in
	// [from, to), in time order.
	Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error
	// Near calls fn with the points of other users that share a
	// timestamp with a point of track and lie within the box of half-side
	// meters around it (Box). A store may return points outside the
	// distance (its zones are coarser than a box), never miss one inside.
	Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error
	// DeleteBefore is one GC pass: delete every point with a timestamp
	// before before (a multiple of BlockSeconds), and return how many
	// were deleted when the store can tell cheaply (-1 otherwise).
	DeleteBefore(ctx context.Context, before int64) (deleted int64, err error)
	// GeoStats counts the points held and their oldest and newest
	// timestamps (0, 0 when empty).
	GeoStats(ctx context.Context) (count, oldest, newest int64, err error)
}

// Retainer is a store whose layout carries the retention itself (a TTL):
// the workload tells it the retention before PrepareGeo.
type Retainer interface {
	SetRetention(d time.Duration)
}

// Attacher is a store that several worker processes share: one prepares
// the layout (PrepareGeo), the others attach to it (keep what is there).
type Attacher interface {
	AttachGeo(ctx context.Context) (layout string, err error)
}

// DurableReader reads a timeline at the level that must see every
// acknowledged write (Cassandra: consistency ALL), for the read-back
// after a node failure.
type DurableReader interface {
	TimelineDurable(ctx context.Context, user, from, to int64, fn func(Point) error) error
	DurableRead() string
}
