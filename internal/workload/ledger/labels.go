package ledger

import "storebench/internal/results"

// LLength is the label of a chain select's step: the length of the chains
// it walked, a size of its own beside the database's n (steps are named
// "…-n1e5-len100", and the report draws the chain selects against it).
const LLength = "length"

func init() {
	results.RegisterSizeLabel(results.SizeLabel{Key: LLength, Short: "len", Symbol: "L", Metric: "length"})
}
