package conn

import (
	"slices"
	"strings"
	"sync"
)

var (
	ownTablesMu sync.Mutex
	ownTables   []string
	ownPrefixes []string
)

// AddOwnTables declares tables (collections, sets) that a workload's
// layouts keep on server targets, at the workload's init. A target's
// Reset (a ladder step that asks for a fresh database) empties those of
// them it holds, and nothing else of the database it was given.
func AddOwnTables(names ...string) {
	ownTablesMu.Lock()
	defer ownTablesMu.Unlock()
	for _, n := range names {
		if !slices.Contains(ownTables, n) {
			ownTables = append(ownTables, n)
		}
	}
}

// OwnTables are the tables the workloads declared, in order.
func OwnTables() []string {
	ownTablesMu.Lock()
	defer ownTablesMu.Unlock()
	return slices.Clone(ownTables)
}

// AddOwnKeyPrefixes declares the key prefixes that a workload's layouts
// write on key-value servers (Redis, Redis Cluster, memcached), at the
// workload's init. On a server named by URI a target's Reset and Cleanup
// delete the keys under them, and nothing else of the database.
func AddOwnKeyPrefixes(prefixes ...string) {
	ownTablesMu.Lock()
	defer ownTablesMu.Unlock()
	for _, p := range prefixes {
		if p != "" && !slices.Contains(ownPrefixes, p) {
			ownPrefixes = append(ownPrefixes, p)
		}
	}
}

// OwnKeyPrefixes are the key prefixes the workloads and targets declared.
func OwnKeyPrefixes() []string {
	ownTablesMu.Lock()
	defer ownTablesMu.Unlock()
	return slices.Clone(ownPrefixes)
}

// IsOwnKey reports whether key lies under one of prefixes.
func IsOwnKey(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
