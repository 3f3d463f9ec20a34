// Package studies embeds the built-in study files, so `storebench run
// ledger` works from the binary alone.
package studies

import "embed"

// FS holds every built-in study, one NAME.yaml per study.
//
//go:embed *.yaml
var FS embed.FS
