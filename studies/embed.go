// Package studies embeds the built-in study files, so `storebench run
// ledger` works from the binary alone.
package studies

import "embed"

// FS holds every built-in study, one NAME.yaml per study.
//
//go:embed *.yaml
var FS embed.FS

// Seeds holds the seed studies' figures, transcribed once as data: one
// seeds/NNN.yaml per seed (see package seedcmp).
//
//go:embed seeds/*.yaml
var Seeds embed.FS
