#!/usr/bin/env bash
# Builds go-ycsb v1.0.1 (Go module github.com/pingcap/go-ycsb, pinned), the
# YCSB client make bench-ycsb compares storebench's ycsb with, into
# ~/.cache/storebench/go-ycsb-v1.0.1/go-ycsb (STOREBENCH_GO_YCSB_DIR
# overrides the folder), outside the checkout. Its go.mod has replace
# directives, so `go install …@v1.0.1` refuses it: the module is fetched
# with `go mod download`, copied and built in place. Idempotent and fast
# when the binary is there.
set -euo pipefail
version=v1.0.1
dir=${STOREBENCH_GO_YCSB_DIR:-$HOME/.cache/storebench/go-ycsb-$version}
bin=$dir/go-ycsb
if [ -x "$bin" ]; then
  echo "install-go-ycsb: go-ycsb $version already in $dir"
  exit 0
fi
src=$(go mod download -json "github.com/pingcap/go-ycsb@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
mkdir -p "$dir"
echo "install-go-ycsb: building go-ycsb $version (minutes on 2 cores)"
(cd "$work" && GOFLAGS=-mod=mod nice -n 10 go build -o "$bin.tmp" ./cmd/go-ycsb)
mv "$bin.tmp" "$bin"
echo "install-go-ycsb: $bin"
