package conn

import (
	"slices"
	"sync"
)

var (
	ownTablesMu sync.Mutex
	ownTables   []string
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
