#!/usr/bin/env bash
# Installs Apache Kafka for storebench (the tripcache study's Kafka
# transport): org.apache.kafka:kafka_2.13 and kafka-tools (pinned) and a
# log4j binding, with their runtime dependencies, from Maven Central (mvn
# dependency:copy-dependencies) into
#   ${STOREBENCH_HOME:-~/.cache/storebench}/kafka/<version>/lib
# installing Java 17 and Maven with apt-get first if they are missing.
# Idempotent. The steps live in Go (internal/server/kafka, Install), shared
# with `storebench server install kafka`.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "install-kafka: go run ./internal/server/kafka/cmd/install" >&2
exec go run ./internal/server/kafka/cmd/install "$@"
