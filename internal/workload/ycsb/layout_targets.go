package ycsb

import (
	"storebench/internal/target/memcached"
	"storebench/internal/target/redis"
	"storebench/internal/target/rediscluster"
	"storebench/internal/workload/layout"
)

// The YCSB tables that stay in their targets: Redis's and Redis
// Cluster's hashes and memcached's items, each a hand-tuned path whose
// requests are built without a map or an allocation per operation
// (package target/internal/ycsbhash) and which shares its field names
// with the target's event-loop connections (target.EventedRecords). They
// are listed in Layouts by their type, so that the compiler holds each to
// DB and to what else it offers, and changing DB breaks them here;
// internal/archtest fails on a type under internal/target that
// implements an interface of a workload without its workload naming it.
var (
	_ Attacher         = (*redis.Store)(nil)
	_ Attacher         = (*rediscluster.Store)(nil)
	_ DurableReader    = (*rediscluster.Store)(nil)
	_ AsyncReplication = (*rediscluster.Store)(nil)
	_ FaultWatcher     = (*rediscluster.Store)(nil)
)

// targetLayout is the YCSB table a target of type T holds itself.
func targetLayout[T DB](name, on string) layout.Layout[DB] {
	return layout.Layout[DB]{Name: name, On: on, Provides: dbCaps,
		Open: func(h any) (DB, bool) { db, ok := h.(T); return db, ok }}
}

var (
	redisLayout = targetLayout[*redis.Store]("redis",
		"Redis's own YCSB hashes, usertable:<key> (redis.Store)")
	redisClusterLayout = targetLayout[*rediscluster.Store]("rediscluster",
		"Redis Cluster's own YCSB hashes, hash-slotted (rediscluster.Store)")
	memcachedLayout = targetLayout[*memcached.Store]("memcached",
		"memcached's own YCSB items, fields length-prefixed (memcached.Store)")
)
