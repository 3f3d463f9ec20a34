#!/usr/bin/env bash
# Installs Apache Kafka for storebench (the tripcache study's Kafka
# transport): org.apache.kafka:kafka_2.13 and kafka-tools (pinned) and a
# log4j binding, with their runtime dependencies, from Maven Central (mvn
# dependency:copy-dependencies) into
#   ${STOREBENCH_HOME:-~/.cache/storebench}/kafka/<version>/lib
# installing Java 17 and Maven with apt-get first if they are missing.
# Idempotent. The steps live in Go (internal/server/kafka, Install), shared
# with `storebench server install kafka`; its manifest
# (internal/server/kafka/manifest.txt, install=go) has
# scripts/install-servers.sh run them with `go run`. This is that, by its
# old name.
set -euo pipefail
exec "$(dirname "$0")/install-servers.sh" kafka
