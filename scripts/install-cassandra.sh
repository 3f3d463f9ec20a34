#!/usr/bin/env bash
# Installs Apache Cassandra for storebench: org.apache.cassandra:cassandra-all
# and its runtime dependencies from Maven Central (mvn
# dependency:copy-dependencies) into
#   ${STOREBENCH_HOME:-~/.cache/storebench}/cassandra/<version>/lib
# installing Java 17 and Maven with apt-get first if they are missing.
# Idempotent: a complete jar set is left alone. The steps live in Go
# (internal/server/cassandra, Install), shared with
# `storebench server install cassandra`; this runs them without building
# storebench first.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "install-cassandra: go run ./internal/server/cassandra/cmd/install" >&2
exec go run ./internal/server/cassandra/cmd/install "$@"
