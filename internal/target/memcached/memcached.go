// Package memcached is the storebench target for memcached, through
// bradfitz/gomemcache (the text protocol).
//
// It runs YCSB only. A record is one item: its fields in order, each
// length-prefixed (uvarint), as YCSB's key-value layout stores them. An
// update reads the item with its CAS id (gets), merges the new fields and
// writes it back with cas, retrying if another client changed it in
// between. memcached keeps no order and cannot scan, so it offers neither
// ycsb.Scanner nor the ledger layout (which needs chains in order).
//
// memcached holds data in memory only and evicts the least recently used
// items when full: there is no durability to map the study's class onto,
// which Settings say.
package memcached

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the gomemcache pseudo-version in go.mod (the test
// checks it).
const moduleVersion = "v0.0.0-20260422231931-4d751bb6e37c"

const (
	name        = "memcached"
	defaultPool = 16
	// timeout is the client's dial and per-operation I/O timeout (one
	// setting in gomemcache), short enough for Open's 5 s bound.
	timeout   = 3 * time.Second
	maxKeyLen = 250
)

var optionNames = []string{"pool"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "memcached",
		Version:     "gomemcache " + moduleVersion,
		OptionNames: optionNames,
		Server:      "memcached",
		Schemes:     []string{"memcached"},
		// memcached takes no credentials: whatever stands there was meant as one.
		LoneUserSecret: []string{"memcached"},
		Provides:       target.Caps{target.KeyValue, target.Pipeline},
		Open:           targetkit.Closer(Open),
	})
}

// Store is an open memcached client. gomemcache takes no context: each
// operation checks the caller's before every round trip, and its end
// interrupts a round trip in progress (targetkit.ConnWatch). It implements ycsb.DB (without
// Scanner) and is safe for concurrent use.
type Store struct {
	c        *memcache.Client
	addr     string // host:port, for the setget sessions
	watch    *targetkit.ConnWatch
	settings map[string]string
	fields   int  // YCSB fields per record, set by Init (ycsb.go)
	external bool // a server named by URI: no flush_all, own keys only
}

// Open connects to o.URI (memcached://host:port) and checks that the
// server answers.
func Open(o target.Options) (*Store, error) { return targetkit.OpenServer(name, o, open) }

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), "memcached://host:port")
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	u, err := targetkit.ParseURI(o.URI, "memcached://")
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		return nil, errors.New("credentials given, but the text protocol has no authentication (SASL needs the binary protocol)")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "11211"
	}
	addr := net.JoinHostPort(host, port)
	c := memcache.New(addr)
	c.Timeout = timeout
	watch := targetkit.NewConnWatch()
	c.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return watch.Track(nc), nil
	}
	c.MaxIdleConns = pool
	if err := c.Ping(); err != nil {
		return nil, target.NoAnswer(err, timeout)
	}
	durability := "none: memory only, least recently used items evicted when full"
	if isSync {
		durability += " (the study's sync class cannot apply)"
	}
	return &Store{c: c, addr: addr, watch: watch, external: o.External, settings: map[string]string{
		"server":      redact.Text(o.URI),
		"client":      "gomemcache " + moduleVersion + " (text protocol)",
		"durability":  durability,
		"pool":        fmt.Sprintf("up to %d idle connections kept (gomemcache dials more on demand)", pool),
		"layout.ycsb": "one item per record: fields length-prefixed (uvarint); update = gets + cas, retried on conflict; no scan",
		"timeout":     timeout.String() + " dial and per-operation I/O",
		"setget":      "one connection per load goroutine, text protocol set/get pipelines without allocation (not gomemcache)",
	}}, nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes idle connections.
func (s *Store) Close() error {
	s.watch.Release()
	return s.c.Close()
}

// begin prepares a round trip under ctx: none once it has ended, and its
// end interrupts the one in progress.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.watch.Watch(ctx)
	return nil
}

func itemKey(key []byte) (string, error) {
	if len(key) == 0 || len(key) > maxKeyLen {
		return "", fmt.Errorf("key %q: memcached keys are 1..%d bytes", key, maxKeyLen)
	}
	return string(key), nil
}
