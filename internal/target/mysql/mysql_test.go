package mysql_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	_ "storebench/internal/server/mariadb"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "mysql", "mariadb", "mysql")
	servers.ModuleVersion(t, "github.com/go-sql-driver/mysql", "v1.10.1")
}

// One server serves every subtest.
func TestWithServer(t *testing.T) {
	uri := servertest.URI(t, "mariadb")
	open := func(t *testing.T, uri string, d kv.Durability) any {
		h := servers.Open(t, "mysql", target.Options{URI: uri, Durability: d})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The workloads' layouts are checked in their packages (ledger's and
	// ycsb's TestLayoutOnServerTargets, pointselect's
	// TestSelectOnServerTargets).
	t.Run("Settings", func(t *testing.T) {
		h := open(t, uri, kv.Sync)
		s := servers.Settings(t, h, "layout.ledger", "batch")
		t.Logf("settings: %v", s)
		if !strings.Contains(s["durability"], "innodb_flush_log_at_trx_commit=1") {
			t.Errorf("durability %q", s["durability"])
		}
	})
	// A database the user may not create fails Open clearly (a user with
	// the privilege gets it created).
	t.Run("MissingDatabase", func(t *testing.T) {
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = fmt.Sprintf("/sb_missing_%d", time.Now().UnixNano())
		err = servers.OpenFails(t, "mysql", u.String())
		if !strings.Contains(err.Error(), "sb_missing_") {
			t.Errorf("error does not name the database: %v", err)
		}
	})
	// A user the server does not know is refused without the password
	// showing.
	t.Run("RefusedCredentials", func(t *testing.T) {
		servers.OpenFails(t, "mysql", servers.WithCredentials(uri, "nobody"))
	})
}

func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "mysql", "mysql://bench:%s@127.0.0.1:%d/storebench")
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "mysql", "mysql://bench:%s@127.0.0.1:%d/storebench")
}
