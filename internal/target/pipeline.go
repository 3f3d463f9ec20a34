package target

import (
	"context"

	"storebench/internal/evloop"
)

// What a key-value server offers on connections of its own (Redis,
// memcached): pipelined SETs and GETs, the shape of redis-benchmark's and
// memaslap's loads (the setget workload).

// Pipeliner is a target that pipelines requests on a connection of its own
// per load goroutine (capability Pipeline).
type Pipeliner interface {
	// NewSession opens a connection whose I/O ends when ctx does: a
	// cancelled step must not wait on a server that stopped answering.
	NewSession(ctx context.Context) (Session, error)
}

// Session is one connection. Keys and values are only borrowed for the
// call; implementations reuse their buffers.
type Session interface {
	// Set stores vals[i] under keys[i], pipelined in one round trip.
	Set(keys, vals [][]byte) error
	// Get fetches keys in one round trip and calls fn with each value
	// (nil when absent); fn's slice is only valid during the call.
	Get(keys [][]byte, fn func(i int, v []byte) error) error
	Close() error
}

// EventedSession is the optional ability of a Session on a plain socket
// whose protocol an event loop can drive (package evloop): a pipeline then
// costs a write, a read and a share of one epoll_wait, as it does in
// redis-benchmark's and memaslap's loops, instead of a goroutine's park
// and wake per round trip.
type EventedSession interface {
	// Events hands the session's socket to an event loop; operation seq
	// is then one pipeline as p says, every reply parsed in full. After
	// Events only the returned Conn is used (Close still closes the
	// connection).
	Events(name string, p PipelinePlan) (evloop.Conn, error)
}

// PipelinePlan is what an evented session sends and checks per operation.
type PipelinePlan struct {
	// Set: SETs of Value under the keys; otherwise GETs of the keys.
	Set   bool
	Value []byte
	// Keys returns operation seq's keys, valid until its next call (the
	// next operation's request).
	Keys func(seq int64) [][]byte
	// Got takes the value that GET i of the last Keys returned (nil when
	// absent; valid only during the call) and says whether it is right.
	Got func(i int, v []byte) error
}
