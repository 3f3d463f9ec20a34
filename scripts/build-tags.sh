#!/usr/bin/env bash
# Prints the Go build tags for the cgo engines whose C libraries are
# installed, so `go build ./...` works everywhere and `make` builds every
# engine this machine can run.
tags=()
[ -f /usr/include/rocksdb/c.h ] && tags+=(rocksdb)
# MoeingADS links the same RocksDB and compiles its C++ B-tree.
[ -f /usr/include/rocksdb/c.h ] && command -v "${CXX:-g++}" >/dev/null && tags+=(moeingads)
[ -f /usr/include/leveldb/c.h ] && tags+=(leveldb)
[ -f /usr/include/sqlite3.h ] && tags+=(libsqlite3)
echo "${tags[*]}"
