// Package all registers every server storebench can run: import it for
// its side effects (server.Lookup, server.All). One line per server.
package all

import (
	_ "storebench/internal/server/apache"
	_ "storebench/internal/server/cassandra"
	_ "storebench/internal/server/ferretdb"
	_ "storebench/internal/server/kafka"
	_ "storebench/internal/server/mariadb"
	_ "storebench/internal/server/memcached"
	_ "storebench/internal/server/nginx"
	_ "storebench/internal/server/node"
	_ "storebench/internal/server/postgres"
	_ "storebench/internal/server/redis"
	_ "storebench/internal/server/rediscluster"
)
