// Package servers registers the client targets of the data-store servers
// storebench measures (Redis, PostgreSQL, MySQL/MariaDB, Cassandra,
// holds the conformance checks those targets share (conformance.go), for
// their tests.
package servers

import (
	_ "storebench/internal/target/aerospike"
	_ "storebench/internal/target/cassandra"
	_ "storebench/internal/target/memcached"
	_ "storebench/internal/target/mongodb"
	_ "storebench/internal/target/mysql"
	_ "storebench/internal/target/postgres"
	_ "storebench/internal/target/redis"
	_ "storebench/internal/target/rediscluster"
	_ "storebench/internal/target/web"
)
