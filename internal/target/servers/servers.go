// Package servers registers the client targets of the data-store servers
// storebench measures (Redis, PostgreSQL, MySQL/MariaDB, Cassandra, ...)
// and holds the conformance checks those targets share (conformance.go),
// for their tests: registration, Open (with the capabilities of the
// engine interfaces), unreachable and silent servers, credentials,
// settings, pipelined requests. Each workload checks its own layouts on
// these targets in its package's tests.
package servers

import (
	_ "storebench/internal/target/aerospike"
	_ "storebench/internal/target/cassandra"
	_ "storebench/internal/target/kafka"
	_ "storebench/internal/target/memcached"
	_ "storebench/internal/target/mongodb"
	_ "storebench/internal/target/mysql"
	_ "storebench/internal/target/postgres"
	_ "storebench/internal/target/redis"
	_ "storebench/internal/target/rediscluster"
	_ "storebench/internal/target/web"
)
