#!/usr/bin/env bash
# Prints the Go build tags for the cgo engines whose C libraries are
# installed, so `go build ./...` works everywhere and `make` builds every
# engine this machine can run.
tags=()
[ -f /usr/include/rocksdb/c.h ] && tags+=(rocksdb)
[ -f /usr/include/leveldb/c.h ] && tags+=(leveldb)
[ -f /usr/include/sqlite3.h ] && tags+=(libsqlite3)
echo "${tags[*]}"
