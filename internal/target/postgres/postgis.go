package postgres

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"storebench/internal/target"
)

// The geo workload's layouts on PostgreSQL (workload/geo's layout_sql.go),
// as the settings state them: B-tree on the postgres target, GiST on the
// postgis target.
const (
	geoLayoutBTree = "geo_points(ts bigint, user_id bigint, lat float8, lon float8), B-tree (ts, lat) and (user_id, ts)"
	geoLayoutGiST  = "geo_gis(ts bigint, user_id bigint, pos geometry(PointZ, 4326), z = time), GiST (pos gist_geometry_ops_nd), B-tree (user_id, ts) and (ts)"
)

// GIS is the postgis target's handle: the PostgreSQL client on a server
// with the PostGIS extension (conn.PostGIS), offering its pool and
// nothing else (the other workloads run on the postgres target).
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
		Provides:       target.Caps{target.SQLArrays},
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

// PostgresPool implements conn.Postgres.
func (g *GIS) PostgresPool() *pgxpool.Pool { return g.s.pool }

// PostGIS implements conn.PostGIS.
func (g *GIS) PostGIS(ctx context.Context) (string, error) {
	if _, err := g.s.pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis"); err != nil {
		return "", fmt.Errorf("CREATE EXTENSION postgis (Debian: apt-get install %s): %w", gisPackage, err)
	}
	var version string
	if err := g.s.pool.QueryRow(ctx, "SELECT postgis_lib_version()").Scan(&version); err != nil {
		return "", fmt.Errorf("reading the PostGIS version: %w", err)
	}
	g.settings["postgis_version"] = version
	return version, nil
}
