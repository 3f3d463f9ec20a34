package postgres

import "context"

// Reset empties the ledger tables, for a fresh ladder step (YCSB's Init
// recreates its own table).
func (s *Store) Reset(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, "TRUNCATE txs, balances")
	return err
}
