package rediscluster

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// NodeInfo is one line of CLUSTER NODES: a node as the node asked sees it.
type NodeInfo struct {
	ID string
	// Addr is host:port (the client port; the bus port and hostname
	// are dropped).
	Addr string
	// Primary is true for a primary ("master"), false for a replica.
	Primary bool
	// PrimaryID is a replica's primary ("-" for a primary).
	PrimaryID string
	// Failed: flagged fail (or fail?: suspected by the node asked).
	Failed    bool
	Suspected bool
	// Slots are the ranges a primary serves ("0-5460", "5461").
	Slots []string
}

// SlotCount is how many slots the node's ranges hold.
func (n NodeInfo) SlotCount() int {
	c := 0
	for _, r := range n.Slots {
		lo, hi, err := slotRange(r)
		if err == nil {
			c += hi - lo + 1
		}
	}
	return c
}

// slotRange parses "0-5460" or "5461"; an importing/migrating entry
// ("[5461->-id]") is an error.
func slotRange(r string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(r, "-")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("slot range %q", r)
	}
	hi = lo
	if ok {
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, fmt.Errorf("slot range %q", r)
		}
	}
	if lo < 0 || hi < lo || hi >= Slots {
		return 0, 0, fmt.Errorf("slot range %q", r)
	}
	return lo, hi, nil
}

// ParseNodes reads the reply of CLUSTER NODES.
func ParseNodes(text string) ([]NodeInfo, error) {
	var out []NodeInfo
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: want at least 8 fields", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		n := NodeInfo{ID: f[0], Addr: addr, PrimaryID: f[3]}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "master":
				n.Primary = true
			case "fail":
				n.Failed = true
			case "fail?":
				n.Suspected = true
			}
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being migrated
			}
			if _, _, err := slotRange(s); err != nil {
				return nil, fmt.Errorf("CLUSTER NODES line %q: %w", line, err)
			}
			n.Slots = append(n.Slots, s)
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := NodeIndex(out[i].Addr), NodeIndex(out[j].Addr)
		return a < b || a == b && out[i].Addr < out[j].Addr
	})
	return out, nil
}

// Covered checks that the primaries' slots cover 0..16383 exactly once.
func Covered(nodes []NodeInfo) error {
	var seen [Slots]bool
	n := 0
	for _, x := range nodes {
		if !x.Primary {
			continue
		}
		for _, r := range x.Slots {
			lo, hi, err := slotRange(r)
			if err != nil {
				return err
			}
			for s := lo; s <= hi; s++ {
				if seen[s] {
					return fmt.Errorf("slot %d served twice", s)
				}
				seen[s] = true
				n++
			}
		}
	}
	if n != Slots {
		return fmt.Errorf("%d of %d slots served", n, Slots)
	}
	return nil
}

// Describe says, for each node by address, what it is: "primary, slots
// 0-5460" or "replica of 127.0.0.1:7000", with ", FAILED" when flagged.
func Describe(nodes []NodeInfo) map[string]string {
	byID := map[string]string{}
	for _, n := range nodes {
		byID[n.ID] = n.Addr
	}
	out := map[string]string{}
	for _, n := range nodes {
		var s string
		if n.Primary {
			s = "primary"
			if len(n.Slots) > 0 {
				s += fmt.Sprintf(", slots %s (%d)", strings.Join(n.Slots, ","), n.SlotCount())
			} else {
				s += ", no slots"
			}
		} else {
			of := byID[n.PrimaryID]
			if of == "" {
				of = n.PrimaryID
			}
			s = "replica of " + of
		}
		if n.Failed {
			s += ", FAILED"
		}
		out[n.Addr] = s
	}
	return out
}

// Client is a one-connection client of one node (no cluster
// redirections: it asks that node), for probes and topology.
func Client(addr, password string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: password, Protocol: 2, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		DialTimeout:              time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		PoolSize: 1, MaxRetries: -1, ContextTimeoutEnabled: true,
	})
}

// Nodes asks the node at addr for CLUSTER NODES.
func Nodes(ctx context.Context, addr, password string) ([]NodeInfo, error) {
	c := Client(addr, password)
	defer c.Close()
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES at %s: %w", addr, err)
	}
	return ParseNodes(text)
}

// Info is the node's CLUSTER INFO as fields (cluster_state: ok...).
func Info(ctx context.Context, addr, password string) (map[string]string, error) {
	c := Client(addr, password)
	defer c.Close()
	text, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER INFO at %s: %w", addr, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// NodeIndex is the index (from 1) of a node on 127.0.0.i, or 0.
func NodeIndex(addr string) int {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	ip := net.ParseIP(host).To4()
	if ip == nil || ip[0] != 127 || ip[1] != 0 || ip[2] != 0 {
		return 0
	}
	return int(ip[3])
}
