package aerospike

import "context"

// Reset truncates the ledger sets of the namespace, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	for _, set := range []string{"txs", "chain", "balances"} {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.c.Truncate(nil, s.ns, set, nil); err != nil {
			return err
		}
	}
	return nil
}
