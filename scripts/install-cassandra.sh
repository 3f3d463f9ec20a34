#!/usr/bin/env bash
# Installs Apache Cassandra for storebench: org.apache.cassandra:cassandra-all
# and its runtime dependencies from Maven Central (mvn
# dependency:copy-dependencies) into
#   ${STOREBENCH_HOME:-~/.cache/storebench}/cassandra/<version>/lib
# installing Java 17 and Maven with apt-get first if they are missing.
# Idempotent: a complete jar set is left alone. The steps live in Go
# (internal/server/cassandra, Install), shared with
# `storebench server install cassandra`; its manifest
# (internal/server/cassandra/manifest.txt, install=go) has
# scripts/install-servers.sh run them with `go run`, without building
# storebench first. This is that, by its old name.
set -euo pipefail
exec "$(dirname "$0")/install-servers.sh" cassandra
