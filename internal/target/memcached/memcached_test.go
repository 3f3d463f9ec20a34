package memcached_test

import (
	"fmt"
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/memcached"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "memcached", "memcached", "memcached")
	servers.ModuleVersion(t, "github.com/bradfitz/gomemcache", "v0.0.0-20260422231931-4d751bb6e37c")
}

// One server serves every subtest.
func TestWithServer(t *testing.T) {
	uri := servertest.URI(t, "memcached")
	open := func(t *testing.T, d kv.Durability) any {
		h := servers.Open(t, "memcached", target.Options{URI: uri, Durability: d})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The YCSB layout is checked in package ycsb
	// (TestLayoutOnServerTargets).
	t.Run("Settings", func(t *testing.T) {
		h := open(t, kv.Sync)
		s := servers.Settings(t, h)
		t.Logf("settings: %v", s)
		if !strings.Contains(s["durability"], "none") {
			t.Errorf("durability %q does not say memcached keeps nothing", s["durability"])
		}
	})
	t.Run("SetGet", func(t *testing.T) {
		servers.SetGet(t, open(t, kv.Async))
	})
	// memcached keeps no order: it offers no ledger layout (declares no
	// secondary lookups; package ledger's TestNoLayoutOnMemcached checks
	// the layout, package captest the declaration against the layouts).
	t.Run("Caps", func(t *testing.T) {
		info, err := target.Lookup("memcached")
		if err != nil {
			t.Fatal(err)
		}
		if info.Provides.Has(target.Secondary) {
			t.Error("memcached declares secondary lookups")
		}
		servers.CheckCaps(t, info, open(t, kv.Async))
	})
}

func TestUnreachable(t *testing.T) {
	uri := fmt.Sprintf("memcached://127.0.0.1:%d", servers.ClosedPort(t))
	err := servers.OpenFails(t, "memcached", uri)
	if !strings.Contains(err.Error(), uri) {
		t.Errorf("error does not name %s: %v", uri, err)
	}
}

// The text protocol has no authentication: credentials are refused, and
// their password not shown.
func TestCredentialsRefused(t *testing.T) {
	servers.Unreachable(t, "memcached", "memcached://bench:%s@127.0.0.1:%d")
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "memcached", "memcached://127.0.0.1:%[2]d/%.0[1]s")
}
