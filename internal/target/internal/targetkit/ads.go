package targetkit

// ADSOnly is the Cannot list of the authenticated targets (mpt, iavl,
// moeingads): they are ads.Store handles, not kv.Store ones, so only the
// block-structured workloads of seed 001 (ads-rw, tokens) can drive them.
func ADSOnly() map[string]string {
	const why = "an authenticated store runs only the block workloads ads-rw and tokens"
	return map[string]string{"ledger": why, "ycsb": why}
}
