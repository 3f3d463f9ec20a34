// Package sqlite is the storebench target for SQLite, used as a key-value
// store through mattn/go-sqlite3: one WITHOUT ROWID table in WAL mode. It
// needs cgo; built with the "libsqlite3" tag it links the system library,
// otherwise the amalgamation bundled with go-sqlite3. Without cgo the
// engine is registered as unavailable with the reason and the fix.
package sqlite

import "storebench/internal/kv"

var optionNames = []string{"mmap_bytes", "reader_conns"}

func init() {
	kv.Register(kv.Engine{
		Name:        "sqlite",
		Title:       "SQLite",
		Kind:        "cgo",
		Open:        openFunc,
		Version:     version(),
		Unavailable: unavailable,
		OptionNames: optionNames,
		More:        []string{"sql", "document-store", "compaction"},
	})
}
