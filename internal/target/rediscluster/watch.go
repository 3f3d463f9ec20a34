package rediscluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	srv "storebench/internal/server/rediscluster"
)

// pollEvery is how often the watch asks every node for its
// cluster_state: fine enough to time a failover of a few seconds, and a
// handful of commands per second, nothing beside the load.
const pollEvery = 200 * time.Millisecond

// WatchFaults implements ycsb.FaultWatcher: it reads the topology, then
// polls every node's CLUSTER INFO until done is called; done reads the
// topology again and says which node serves each primary's slots now,
// and for how long some node that answered said the cluster was not ok
// (a primary failed and its slots not yet taken over).
func (s *Store) WatchFaults(ctx context.Context) func(context.Context) (map[string]string, map[string]float64) {
	before, berr := srv.Topology(ctx, s.addrs, s.password)
	wctx, cancel := context.WithCancel(ctx)
	var (
		mu        sync.Mutex
		notOK     time.Duration
		firstBad  time.Time
		lastBad   time.Time
		badStates = map[string]bool{}
		wg        sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			bad := s.clusterNotOK(wctx)
			if len(bad) > 0 {
				now := time.Now()
				mu.Lock()
				notOK += pollEvery
				if firstBad.IsZero() {
					firstBad = now
				}
				lastBad = now
				for _, b := range bad {
					badStates[b] = true
				}
				mu.Unlock()
			}
		}
	}()
	started := time.Now()
	return func(ctx context.Context) (map[string]string, map[string]float64) {
		cancel()
		wg.Wait()
		facts := map[string]string{}
		if berr != nil {
			facts["topology_before"] = "unknown: " + berr.Error()
		} else {
			facts["topology_before"] = describe(before)
		}
		after, aerr := srv.Topology(ctx, s.addrs, s.password)
		if aerr != nil {
			facts["topology_after"] = "unknown: " + aerr.Error()
		} else {
			facts["topology_after"] = describe(after)
		}
		if berr == nil && aerr == nil {
			facts["failover"] = failover(before, after)
		}
		mu.Lock()
		defer mu.Unlock()
		if notOK > 0 {
			var states []string
			for b := range badStates {
				states = append(states, b)
			}
			sort.Strings(states)
			facts["cluster_not_ok"] = fmt.Sprintf("about %.1f s (polled every %v): from %.1f s to %.1f s after the load began, a node said %s",
				notOK.Seconds(), pollEvery, firstBad.Sub(started).Seconds(), lastBad.Sub(started).Seconds(), strings.Join(states, ", "))
		} else {
			facts["cluster_not_ok"] = fmt.Sprintf("never seen (every node that answered said cluster_state:ok, polled every %v)", pollEvery)
		}
		return facts, map[string]float64{"cluster_not_ok_seconds": notOK.Seconds()}
	}
}

// clusterNotOK asks every node at once; nodes that do not answer within
// the poll (a paused one) are skipped. It returns "node1: cluster_state
// fail" for each that answers something other than ok.
func (s *Store) clusterNotOK(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, pollEvery)
	defer cancel()
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for _, a := range s.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := srv.Info(ctx, a, s.password)
			if err != nil || info["cluster_state"] == "ok" {
				return
			}
			mu.Lock()
			bad = append(bad, nodeName(a)+": cluster_state "+info["cluster_state"])
			mu.Unlock()
		}()
	}
	wg.Wait()
	return bad
}

// nodeName is "node3" for 127.0.0.3:port (the managed cluster's naming),
// else the address.
func nodeName(addr string) string {
	if i := srv.NodeIndex(addr); i > 0 {
		return "node" + strconv.Itoa(i)
	}
	return addr
}

// describe is the topology in one line: "node1 127.0.0.1:P primary,
// slots 0-5460 (5461); node4 … replica of node3".
func describe(t map[string]string) string {
	var parts []string
	for _, a := range srv.SortedAddrs(t) {
		parts = append(parts, nodeName(a)+" "+a+": "+names(t[a]))
	}
	return strings.Join(parts, "; ")
}

// names replaces node addresses with node names in a description.
func names(s string) string {
	if a, ok := strings.CutPrefix(s, "replica of "); ok {
		rest := ""
		if i := strings.Index(a, ","); i >= 0 {
			a, rest = a[:i], a[i:]
		}
		return "replica of " + nodeName(a) + rest
	}
	return s
}

// failover says, for each primary at the start whose slots another node
// serves now, which node took them and what the former primary is.
func failover(before, after map[string]string) string {
	slotsOf := func(desc string) string {
		if !strings.HasPrefix(desc, "primary, slots ") {
			return ""
		}
		return strings.TrimPrefix(strings.TrimSuffix(desc, ", FAILED"), "primary, slots ")
	}
	var out []string
	for _, a := range srv.SortedAddrs(before) {
		slots := slotsOf(before[a])
		if slots == "" {
			continue
		}
		for _, b := range srv.SortedAddrs(after) {
			if b != a && slotsOf(after[b]) == slots {
				out = append(out, fmt.Sprintf("slots %s of %s are now served by %s (was %s); %s is now %s",
					slots, nodeName(a), nodeName(b), names(before[b]), nodeName(a), names(after[a])))
			}
		}
	}
	if len(out) == 0 {
		return "none: every primary at the start serves its slots still"
	}
	return strings.Join(out, "; ")
}
