//go:build cgo && !libsqlite3

package sqlite

const linkage = "amalgamation bundled with go-sqlite3"
