#!/usr/bin/env bash
# make test: install what the tests need, start every server once for the
# whole suite, run vet and the tests, stop the servers (also on failure or
# Ctrl-C). A server that cannot be installed or started fails the run: a
# missing install step must show, never hide behind a skipped test.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
scripts/install-deps.sh --strict
scripts/install-servers.sh tests # every server's install step (its internal/server/*/manifest.txt) and sshd
scripts/install-browser.sh # chromium: internal/report/browsertest opens report.html
scripts/install-hdr-readers.sh # HdrHistogram_py and the Java jar read the .hlog files (cmd/storebench)
tags=$(scripts/build-tags.sh)

if [ -n "$(gofmt -l cmd internal studies)" ]; then
  echo "gofmt needed:"; gofmt -l cmd internal studies; exit 1
fi
$GO vet -tags "$tags" ./...
$GO build -tags "$tags" -o bin/storebench ./cmd/storebench

# The servers whose manifest says test=shared: one each for the whole suite.
mapfile -t servers < <(scripts/install-servers.sh --shared)
[ ${#servers[@]} -gt 0 ] || { echo "test.sh: scripts/install-servers.sh --shared named no server"; exit 1; }
# Aerospike is a target by URI only: no package ships its server, so its
# tests run only against one named by STOREBENCH_TEST_AEROSPIKE_URI
# (aerospike://host:port/namespace); without it they skip, and the last
# line says so.
aerospike_line() {
  if [ -z "${STOREBENCH_TEST_AEROSPIKE_URI:-}" ]; then
    echo "aerospike: not tested (set STOREBENCH_TEST_AEROSPIKE_URI to an Aerospike server to run its conformance suite; no package ships its server)"
  else
    echo "aerospike: tested against the server in STOREBENCH_TEST_AEROSPIKE_URI"
  fi
}
stop_all() {
  for s in "${servers[@]}"; do bin/storebench server stop "$s" >/dev/null 2>&1 || true; done
  aerospike_line
}
trap stop_all EXIT
for s in "${servers[@]}"; do
  t0=$(date +%s%N)
  uri=$(bin/storebench server start "$s" --uri-only)
  # ferretdb-pg: STOREBENCH_TEST_FERRETDB_PG_URI (servertest.EnvVar)
  var="STOREBENCH_TEST_$(echo "$s" | tr '[:lower:]-' '[:upper:]_')_URI"
  export "$var=$uri"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf 'started %-10s in %d.%03ds\n' "$s" $((ms / 1000)) $((ms % 1000))
done

# Test packages that need a server use the shared one above; they run one
# package at a time against it only where they would collide (-p 2 keeps
# two packages building/testing at once on 2 cores).
$GO test -tags "$tags" -p 2 -timeout 25m ./...
