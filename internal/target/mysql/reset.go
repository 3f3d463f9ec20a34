package mysql

import "context"

// Reset empties the ledger tables, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	for _, t := range []string{"txs", "balances"} {
		if _, err := s.db.ExecContext(ctx, "TRUNCATE TABLE "+t); err != nil {
			return err
		}
	}
	return nil
}
