//go:build cgo && libsqlite3

package sqlite

const linkage = "system libsqlite3"
