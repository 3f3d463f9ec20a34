package rediscluster_test

// Without the make test servers' URIs in the environment, servertest
// starts a private server: every managed server must be registered.
import _ "storebench/internal/server/all"
