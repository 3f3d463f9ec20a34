// Package catalogs holds the built-in machine catalogs storebench cost
// prices machines from: one NAME.yaml per catalog (aws, scaleway,
// owned), each line transcribed by hand from a public page it names,
// with the date it was read. They are never fetched at run time: prices
// change, and a user's own catalog (storebench cost RUN --catalog
// my.yaml) extends or replaces them.
package catalogs

import "embed"

// FS holds every built-in catalog, NAME.yaml at its root.
//
//go:embed *.yaml
var FS embed.FS
