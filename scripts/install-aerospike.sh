#!/usr/bin/env bash
# Builds Aerospike Server Community Edition's asd for storebench from the
# vendored source (no registry ships the server):
#   ../shared/vendor/aerospike-server-ce-8.1.2.0-src.tar.xz (or
#   $STOREBENCH_VENDOR/...), built once (nice -n 19 make -j2 USE_EE=0,
#   ~7 CPU minutes) and cached in
#   ${STOREBENCH_HOME:-~/.cache/storebench}/aerospike/<tarball sha256>/bin/asd
# installing the Debian build dependencies with apt-get first. Idempotent:
# a cached build is checked and left alone. The steps live in Go
# (internal/server/aerospike, Install), shared with
# `storebench server install aerospike`.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "install-aerospike: go run ./internal/server/aerospike/cmd/install" >&2
exec go run ./internal/server/aerospike/cmd/install "$@"
