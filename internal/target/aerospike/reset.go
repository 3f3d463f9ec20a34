package aerospike

import (
	"context"
	"slices"
	"strconv"
	"strings"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/target"
	"storebench/internal/target/conn"
)

// Reset truncates the sets the workloads keep (conn.OwnTables) in the
// namespace, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	for _, set := range conn.OwnTables() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.c.Truncate(nil, s.ns, set, nil); err != nil {
			return err
		}
	}
	return nil
}

// ownSets are the sets storebench keeps in the namespace: the workloads'
// (conn.OwnTables).
func ownSets() []string { return conn.OwnTables() }

// Occupancy implements target.Occupant: the namespace's sets that hold
// records (info sets/<namespace> on every node), storebench's own apart
// from the others. Sets are counted, not records: a node's count takes
// in its replicas.
func (s *Store) Occupancy(ctx context.Context) (target.Occupancy, error) {
	own := ownSets()
	o := target.Occupancy{Unit: "sets", OwnNames: own}
	held := map[string]bool{}
	for _, nd := range s.c.GetNodes() {
		if err := ctx.Err(); err != nil {
			return o, err
		}
		cmd := "sets/" + s.ns
		m, err := nd.RequestInfo(as.NewInfoPolicy(), cmd)
		if err != nil {
			return o, err
		}
		for _, entry := range strings.Split(m[cmd], ";") {
			var set string
			var objects int64
			for _, kv := range strings.Split(entry, ":") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "set", "set_name":
					set = v
				case "objects", "n_objects":
					objects, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			if set != "" && objects > 0 {
				held[set] = true
			}
		}
	}
	for set := range held {
		if slices.Contains(own, set) {
			o.Own++
		} else {
			o.Foreign++
		}
	}
	return o, nil
}

// Cleanup implements target.Cleaner: it truncates storebench's own sets
// (Reset truncates only those), at the end of a run on a server named
// by URI; the namespace's other sets stay.
func (s *Store) Cleanup(ctx context.Context) error { return s.Reset(ctx) }
