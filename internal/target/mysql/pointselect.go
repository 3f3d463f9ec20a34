package mysql

import (
	"context"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/target"
)

// Integer point selects (pgbench -S shaped, the pointselect workload): a
// connection of its own per load goroutine.

// PrepareIntSelect implements target.IntSelecter: a connection of its own
// (outside the pool) with q prepared.
func (s *Store) PrepareIntSelect(ctx context.Context, q string) (target.IntSelect, error) {
	conn, err := mysql.NewConnector(s.cfg)
	if err != nil {
		return nil, err
	}
	return target.OpenIntSelect(ctx, conn, "mysql", q)
}
