package postgres

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"

	"storebench/internal/target"
	"storebench/internal/workload/geo"
)

// The geo workload's layouts (seed 002's GPS points), two of them:
//
// postgres (B-tree):
//
//	geo_points(ts bigint, user_id bigint, lat float8, lon float8)
//	  index geo_points_time (ts, lat)     -- who was near, at a minute; the GC's range
//	  index geo_points_user (user_id, ts) -- timelines
//
// postgis (GiST): the target "postgis", the same server with the PostGIS
// extension:
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

func (s *Store) geoExec(ctx context.Context, ddl []string) error {
	for _, q := range ddl {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// PrepareGeo implements geo.Store (the B-tree layout).
func (s *Store) PrepareGeo(ctx context.Context) (string, error) {
	return geoLayoutBTree, s.geoExec(ctx, geoBTreeDDL)
}

func (s *Store) InsertPoints(ctx context.Context, pts []geo.Point) error {
	return s.geoInsert(ctx, btreeSQL, pts)
}
func (s *Store) Timeline(ctx context.Context, user, from, to int64, fn func(geo.Point) error) error {
	return s.geoTimeline(ctx, btreeSQL, user, from, to, fn)
}
func (s *Store) Near(ctx context.Context, track []geo.Point, meters float64, fn func(geo.Point) error) error {
	return s.geoNear(ctx, btreeSQL, track, meters, fn)
}
func (s *Store) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	return s.geoDelete(ctx, btreeSQL, before)
}
func (s *Store) GeoStats(ctx context.Context) (int64, int64, int64, error) {
	return s.geoStats(ctx, btreeSQL)
}

func (s *Store) geoInsert(ctx context.Context, q geoSQL, pts []geo.Point) error {
	ts, users := make([]int64, len(pts)), make([]int64, len(pts))
	lat, lon := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		ts[i], users[i], lat[i], lon[i] = p.TS, p.User, p.Lat, p.Lon
	}
	_, err := s.pool.Exec(ctx, q.insert, ts, users, lat, lon)
	return err
}

func (s *Store) geoTimeline(ctx context.Context, q geoSQL, user, from, to int64, fn func(geo.Point) error) error {
	rows, err := s.pool.Query(ctx, q.timeline, user, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		p := geo.Point{User: user}
		if err := rows.Scan(&p.TS, &p.Lat, &p.Lon); err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *Store) geoNear(ctx context.Context, q geoSQL, track []geo.Point, meters float64, fn func(geo.Point) error) error {
	if len(track) == 0 {
		return nil
	}
	n := len(track)
	ts := make([]int64, n)
	lat0, lat1, lon0, lon1 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range track {
		ts[i] = p.TS
		lat0[i], lat1[i], lon0[i], lon1[i] = geo.Box(p, meters)
	}
	rows, err := s.pool.Query(ctx, q.near, ts, lat0, lat1, lon0, lon1, track[0].User)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var p geo.Point
		if err := rows.Scan(&p.User, &p.TS, &p.Lat, &p.Lon); err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *Store) geoDelete(ctx context.Context, q geoSQL, before int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, q.del, before)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (s *Store) geoStats(ctx context.Context, q geoSQL) (count, oldest, newest int64, err error) {
	err = s.pool.QueryRow(ctx, q.stats).Scan(&count, &oldest, &newest)
	return count, oldest, newest, err
}

// GIS is the postgis target's handle: the PostgreSQL client with the
// PostGIS layout of the geo workload, and nothing else (the other
// workloads run on the postgres target).
type GIS struct {
	s        *Store
	settings map[string]string
}

const gisName = "postgis"

// gisPackage is the Debian package of PostGIS for PostgreSQL 15.
const gisPackage = "postgresql-15-postgis-3"

func init() {
	target.Register(target.Info{
		Name:           gisName,
		Title:          "PostGIS (PostgreSQL, GiST)",
		Version:        "pgx " + moduleVersion,
		OptionNames:    optionNames,
		Server:         "postgres",
		ManagedClients: managedClients,
		Provides:       target.Caps{target.Geo},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := Open(o)
			if err != nil {
				return nil, err
			}
			st := maps.Clone(s.settings)
			for k := range st {
				if strings.HasPrefix(k, "layout.") || k == "chain_read" || k == "pointselect" || k == "batch" {
					delete(st, k)
				}
			}
			st["layout.geo"] = geoLayoutGiST
			return &GIS{s: s, settings: st}, nil
		},
	})
}

// Settings implements kv.Describer.
func (g *GIS) Settings() map[string]string { return g.settings }

// Close closes the pool.
func (g *GIS) Close() error { return g.s.Close() }

// PrepareGeo implements geo.Store: the PostGIS extension, then the table.
func (g *GIS) PrepareGeo(ctx context.Context) (string, error) {
	if _, err := g.s.pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis"); err != nil {
		return "", fmt.Errorf("CREATE EXTENSION postgis (Debian: apt-get install %s): %w", gisPackage, err)
	}
	var version string
	if err := g.s.pool.QueryRow(ctx, "SELECT postgis_lib_version()").Scan(&version); err != nil {
		return "", fmt.Errorf("reading the PostGIS version: %w", err)
	}
	g.settings["postgis_version"] = version
	return geoLayoutGiST + ", PostGIS " + version, g.s.geoExec(ctx, geoGiSTDDL)
}

func (g *GIS) InsertPoints(ctx context.Context, pts []geo.Point) error {
	return g.s.geoInsert(ctx, gisSQL, pts)
}
func (g *GIS) Timeline(ctx context.Context, user, from, to int64, fn func(geo.Point) error) error {
	return g.s.geoTimeline(ctx, gisSQL, user, from, to, fn)
}
func (g *GIS) Near(ctx context.Context, track []geo.Point, meters float64, fn func(geo.Point) error) error {
	return g.s.geoNear(ctx, gisSQL, track, meters, fn)
}
func (g *GIS) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	return g.s.geoDelete(ctx, gisSQL, before)
}
func (g *GIS) GeoStats(ctx context.Context) (int64, int64, int64, error) {
	return g.s.geoStats(ctx, gisSQL)
}
