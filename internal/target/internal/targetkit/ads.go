package targetkit

import "storebench/internal/target"

// ADSCaps is what the authenticated targets (mpt, iavl, moeingads)
// provide: they are ads.Store handles, written only in committed blocks,
// so they run the block-structured workloads of seed 001 (ads-rw, tokens)
// and not the ones that write keys one at a time (ledger, ycsb).
var ADSCaps = target.Caps{target.Batch, target.AuthRoots}
