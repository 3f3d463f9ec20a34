package mongodb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"storebench/internal/kv"
	_ "storebench/internal/server/ferretdb"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

// TestMain lets the test binary stand in for storebench: the FerretDB
// server package starts `<this executable> server-main ferretdb ...`.
func TestMain(m *testing.M) { servertest.Main(m) }

func TestInfo(t *testing.T) {
	servers.Info(t, "mongodb", "ferretdb", "mongodb")
	// FerretDB on PostgreSQL: a target of its own, named as what it is;
	// mongodb:// URIs stay with the mongodb target (checked above).
	servers.Info(t, "ferretdb-pg", "ferretdb-pg")
	if info, _ := target.Lookup("ferretdb-pg"); info.Title != "FerretDB (PostgreSQL backend)" {
		t.Errorf("ferretdb-pg titled %q", info.Title)
	}
	servers.ModuleVersion(t, "go.mongodb.org/mongo-driver/v2", "v2.9.3")
}

// One server serves every subtest: FerretDB on SQLite (the mongodb
// target), then on PostgreSQL (the ferretdb-pg target).
func TestWithServer(t *testing.T) {
	for _, c := range []struct{ target, server, note string }{
		{"mongodb", "ferretdb", "on SQLite"},
		{"ferretdb-pg", "ferretdb-pg", "on PostgreSQL"},
	} {
		t.Run(c.target, func(t *testing.T) { withServer(t, c.target, c.server, c.note) })
	}
}

func withServer(t *testing.T, name, srv, note string) {
	// A database of its own on the shared server, dropped at the end:
	// FerretDB scans collections for most queries, so leftovers of earlier
	// runs would slow every later one.
	base := servertest.URI(t, srv)
	dbName := fmt.Sprintf("sbtest_%d", time.Now().UnixNano())
	uri := strings.TrimSuffix(base, "/storebench") + "/" + dbName
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl, err := mongo.Connect(options.Client().ApplyURI(base))
		if err != nil {
			t.Errorf("dropping %s: %v", dbName, err)
			return
		}
		defer cl.Disconnect(ctx)
		if err := cl.Database(dbName).Drop(ctx); err != nil {
			t.Errorf("dropping %s: %v", dbName, err)
		}
	})
	open := func(t *testing.T, d kv.Durability, extra ...string) any {
		o := target.Options{URI: uri, Durability: d, Extra: map[string]string{}}
		for i := 0; i+1 < len(extra); i += 2 {
			o.Extra[extra[i]] = extra[i+1]
		}
		h := servers.Open(t, name, o)
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The workloads' layouts are checked in their packages (ledger's and
	// ycsb's TestLayoutOnServerTargets, both with addresses as strings
	// and as binary _ids).
	t.Run("SyncSettings", func(t *testing.T) {
		h := open(t, kv.Sync)
		s := servers.Settings(t, h, "layout.ledger", "batch", "write_concern", "server_note", "point_lookup")
		t.Logf("settings: %v", s)
		// FerretDB 1.24 explains its point lookup as a collection scan
		// on both backends: the reason the ledger's reads are slow is
		// the server's own plan, shown beside the target.
		scan := map[string]string{"ferretdb": "SQLite plan \"SCAN ", "ferretdb-pg": "PostgreSQL plan \"Seq Scan"}[srv]
		if !strings.Contains(s["point_lookup"], "scans the collection per _id lookup") || !strings.Contains(s["point_lookup"], scan) {
			t.Errorf("point_lookup %q, want a collection scan with a plan %q...", s["point_lookup"], scan)
		}
		// What the note says of indexes holds for this backend only.
		if !strings.Contains(s["server_note"], note) {
			t.Errorf("server_note %q, want one %s", s["server_note"], note)
		}
		if s["write_concern"] != "w:1 j:true" {
			t.Errorf("sync write concern %q, want w:1 j:true", s["write_concern"])
		}
	})
	// Addresses as binary _ids, the layout for MongoDB itself.
	t.Run("BinaryIDs", func(t *testing.T) {
		h := open(t, kv.Sync, "address_id", "binary")
		if s := servers.Settings(t, h); s["address_id"] != "binary" {
			t.Errorf("address_id %q", s["address_id"])
		}
	})
	t.Run("AsyncSettings", func(t *testing.T) {
		h := open(t, kv.Async)
		if db := servers.Settings(t, h)["database"]; db != dbName {
			t.Errorf("database %q, want the URI's", db)
		}
		if s := servers.Settings(t, h); s["write_concern"] != "w:1 j:false" {
			t.Errorf("async write concern %q, want w:1 j:false", s["write_concern"])
		}
	})
	// A fresh ladder step empties storebench's collections: more
	// documents than SQLite's 32766 variables, which FerretDB on SQLite
	// cannot delete in one statement (the ledger's step after 1e5 failed
	// so: "too many SQL variables"), are all deleted.
	t.Run("ResetEmptiesALargeCollection", func(t *testing.T) {
		resetLarge(t, open(t, kv.Async), uri, dbName)
	})
	// Credentials the server refuses fail Open without the password
	// showing.
	t.Run("RefusedCredentials", func(t *testing.T) {
		servers.OpenFails(t, name, servers.WithCredentials(uri, "nobody"))
	})
}

func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "mongodb", "mongodb://bench:%s@127.0.0.1:%d/storebench")
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "mongodb", "mongodb://bench:%s@127.0.0.1:%d/storebench")
}

// resetLarge fills storebench's YCSB collection with more documents than
// SQLite allows variables in one statement, resets the store and checks
// that none is left.
func resetLarge(t *testing.T, h any, uri, dbName string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(ctx)
	c := cl.Database(dbName).Collection("usertable")
	const n, per = 40000, 5000
	for b := 0; b < n; b += per {
		docs := make([]any, per)
		for i := range docs {
			docs[i] = map[string]any{"_id": fmt.Sprintf("user%06d", b+i), "v": int32(b + i)}
		}
		if _, err := c.InsertMany(ctx, docs); err != nil {
			t.Fatalf("inserting: %v", err)
		}
	}
	if got, err := c.CountDocuments(ctx, map[string]any{}); err != nil || got != n {
		t.Fatalf("%d documents before the reset (%v), want %d", got, err, n)
	}
	r, ok := h.(interface{ Reset(context.Context) error })
	if !ok {
		t.Fatalf("%T has no Reset", h)
	}
	if err := r.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if got, err := c.CountDocuments(ctx, map[string]any{}); err != nil || got != 0 {
		t.Errorf("%d documents after the reset (%v), want 0", got, err)
	}
}
