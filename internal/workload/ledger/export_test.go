package ledger

// For the tests of package ledger_test.
var (
	WithoutChainIndex = withoutChainIndex
	ErrNoChainIndex   = errNoChainIndex
)
