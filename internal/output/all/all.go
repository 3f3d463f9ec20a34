// Package all links every optional output of `storebench run` into the
// binary: each registers itself (output.Register) with its flag.
package all

import (
	_ "storebench/internal/output/export"
	_ "storebench/internal/output/metrics"
)
