package conn

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is a target that speaks PostgreSQL's protocol through pgx.
type Postgres interface {
	// PostgresPool is the target's pgx pool (its sessions with the
	// study's synchronous_commit), safe for concurrent use.
	PostgresPool() *pgxpool.Pool
}

// PostGIS is a Postgres target on a server with the PostGIS extension
// (spatial types and their GiST indexes).
type PostGIS interface {
	Postgres
	// PostGIS creates the extension in the target's database if it is
	// missing and returns its version.
	PostGIS(ctx context.Context) (version string, err error)
}
