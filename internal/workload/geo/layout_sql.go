package geo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The geo workload's layouts (seed 002's GPS points), two of them:
//
// postgres (B-tree):
//
//	geo_points(ts bigint, user_id bigint, lat float8, lon float8)
//	  index geo_points_time (ts, lat)     -- who was near, at a minute; the GC's range
//	  index geo_points_user (user_id, ts) -- timelines
//
// postgis (GiST): on a target with the PostGIS extension (conn.PostGIS:
// the target "postgis", the same server):
//
//	geo_gis(ts bigint, user_id bigint, pos geometry(PointZ, 4326))  -- z = ts
//	  index geo_gis_pos USING gist (pos gist_geometry_ops_nd)   -- n-D R-tree over (lon, lat, time)
//	  index geo_gis_user (user_id, ts), index geo_gis_ts (ts)
//
// Both insert a batch as one INSERT … SELECT FROM unnest(arrays) (one
// statement, one round trip) and answer "who was near the track" with one
// query that joins the track's boxes (unnest) with the points: on the
// B-tree layout a range on (ts, lat) filtered by lon, on PostGIS the
// n-D GiST's &&& against a 3-D box of zero height in time. The workload
// keeps the points within the distance itself, so both answers are judged
// by the same rule. The GC is one DELETE … WHERE ts < cutoff per pass.
//
// They run on the target's pgx pool (conn.Postgres), not target.SQLDB:
// their statements bind Go slices as PostgreSQL arrays and scan float8
// and bigint columns in pgx's binary format, which SQLDB's driver bytes
// would leave to decode by hand.

const geoLayoutBTree = "geo_points(ts bigint, user_id bigint, lat float8, lon float8), B-tree (ts, lat) and (user_id, ts)"

var geoBTreeDDL = []string{
	"DROP TABLE IF EXISTS geo_points",
	"CREATE TABLE geo_points (ts bigint NOT NULL, user_id bigint NOT NULL, lat float8 NOT NULL, lon float8 NOT NULL)",
	"CREATE INDEX geo_points_time ON geo_points (ts, lat)",
	"CREATE INDEX geo_points_user ON geo_points (user_id, ts)",
}

// geoSQL are one layout's statements.
type geoSQL struct {
	insert, timeline, near, del, stats string
}

var btreeSQL = geoSQL{
	insert:   "INSERT INTO geo_points (ts, user_id, lat, lon) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::float8[], $4::float8[])",
	timeline: "SELECT ts, lat, lon FROM geo_points WHERE user_id = $1 AND ts >= $2 AND ts < $3 ORDER BY ts",
	near: `SELECT p.user_id, p.ts, p.lat, p.lon
FROM unnest($1::bigint[], $2::float8[], $3::float8[], $4::float8[], $5::float8[]) AS q(ts, lat0, lat1, lon0, lon1)
JOIN geo_points p ON p.ts = q.ts AND p.lat BETWEEN q.lat0 AND q.lat1 AND p.lon BETWEEN q.lon0 AND q.lon1
WHERE p.user_id <> $6`,
	del:   "DELETE FROM geo_points WHERE ts < $1",
	stats: "SELECT count(*), coalesce(min(ts), 0), coalesce(max(ts), 0) FROM geo_points",
}

var gisSQL = geoSQL{
	insert: `INSERT INTO geo_gis (ts, user_id, pos)
SELECT t.ts, t.u, ST_SetSRID(ST_MakePoint(t.lon, t.lat, t.ts), 4326)
FROM unnest($1::bigint[], $2::bigint[], $3::float8[], $4::float8[]) AS t(ts, u, lat, lon)`,
	timeline: "SELECT ts, ST_Y(pos), ST_X(pos) FROM geo_gis WHERE user_id = $1 AND ts >= $2 AND ts < $3 ORDER BY ts",
	near: `SELECT p.user_id, p.ts, ST_Y(p.pos), ST_X(p.pos)
FROM unnest($1::bigint[], $2::float8[], $3::float8[], $4::float8[], $5::float8[]) AS q(ts, lat0, lat1, lon0, lon1)
JOIN geo_gis p ON p.pos &&& ST_SetSRID(ST_3DMakeBox(ST_MakePoint(q.lon0, q.lat0, q.ts), ST_MakePoint(q.lon1, q.lat1, q.ts))::geometry, 4326)
WHERE p.user_id <> $6 AND p.ts = q.ts`,
	del:   "DELETE FROM geo_gis WHERE ts < $1",
	stats: "SELECT count(*), coalesce(min(ts), 0), coalesce(max(ts), 0) FROM geo_gis",
}

const geoLayoutGiST = "geo_gis(ts bigint, user_id bigint, pos geometry(PointZ, 4326), z = time), GiST (pos gist_geometry_ops_nd), B-tree (user_id, ts) and (ts)"

var geoGiSTDDL = []string{
	"DROP TABLE IF EXISTS geo_gis",
	"CREATE TABLE geo_gis (ts bigint NOT NULL, user_id bigint NOT NULL, pos geometry(PointZ, 4326) NOT NULL)",
	"CREATE INDEX geo_gis_pos ON geo_gis USING gist (pos gist_geometry_ops_nd)",
	"CREATE INDEX geo_gis_user ON geo_gis (user_id, ts)",
	"CREATE INDEX geo_gis_ts ON geo_gis (ts)",
}

// pgStore is the geo layout on a PostgreSQL pool (conn.Postgres): the
// B-tree layout's statements, or PostGIS's (gis set).
type pgStore struct {
	pool *pgxpool.Pool
	q    geoSQL
	gis  func(ctx context.Context) (version string, err error)
}

func (s pgStore) geoExec(ctx context.Context, ddl []string) error {
	for _, q := range ddl {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// PrepareGeo implements Store: the B-tree layout, or on PostGIS the
// extension, then the table.
func (s pgStore) PrepareGeo(ctx context.Context) (string, error) {
	if s.gis == nil {
		return geoLayoutBTree, s.geoExec(ctx, geoBTreeDDL)
	}
	version, err := s.gis(ctx)
	if err != nil {
		return "", err
	}
	return geoLayoutGiST + ", PostGIS " + version, s.geoExec(ctx, geoGiSTDDL)
}

// InsertPoints implements Store.
func (s pgStore) InsertPoints(ctx context.Context, pts []Point) error {
	q := s.q
	ts, users := make([]int64, len(pts)), make([]int64, len(pts))
	lat, lon := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		ts[i], users[i], lat[i], lon[i] = p.TS, p.User, p.Lat, p.Lon
	}
	_, err := s.pool.Exec(ctx, q.insert, ts, users, lat, lon)
	return err
}

// Timeline implements Store.
func (s pgStore) Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	q := s.q
	rows, err := s.pool.Query(ctx, q.timeline, user, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		p := Point{User: user}
		if err := rows.Scan(&p.TS, &p.Lat, &p.Lon); err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Near implements Store.
func (s pgStore) Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error {
	q := s.q
	if len(track) == 0 {
		return nil
	}
	n := len(track)
	ts := make([]int64, n)
	lat0, lat1, lon0, lon1 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range track {
		ts[i] = p.TS
		lat0[i], lat1[i], lon0[i], lon1[i] = Box(p, meters)
	}
	rows, err := s.pool.Query(ctx, q.near, ts, lat0, lat1, lon0, lon1, track[0].User)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var p Point
		if err := rows.Scan(&p.User, &p.TS, &p.Lat, &p.Lon); err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DeleteBefore implements Store.
func (s pgStore) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.q.del, before)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// GeoStats implements Store.
func (s pgStore) GeoStats(ctx context.Context) (count, oldest, newest int64, err error) {
	err = s.pool.QueryRow(ctx, s.q.stats).Scan(&count, &oldest, &newest)
	return count, oldest, newest, err
}
