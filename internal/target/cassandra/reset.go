package cassandra

import "context"

// Reset empties the ledger tables, for a fresh ladder step (the managed
// server runs with auto_snapshot off, so TRUNCATE leaves no copy behind).
func (s *Store) Reset(ctx context.Context) error {
	for _, t := range []string{"txs_by_addr", "txs_by_chain", "balances"} {
		if err := s.s.Query("TRUNCATE " + s.ks + "." + t).WithContext(ctx).Exec(); err != nil {
			return err
		}
	}
	return nil
}
