// Package captest checks, on an opened target, that the capabilities a
// workload finds through its own layouts are the ones the target
// declares: key-value records and ordered scans (a ycsb.DB, a
// ycsb.Scanner), secondary lookups (a ledger layout), a document store
// (a documents layout), an HTTP endpoint (an http.Site), the geo layout, and data shared across worker
// processes (a ycsb.Attacher). The capabilities that stand for an
// engine interface of package target, kv or ads are checked by
// servers.CheckCaps, which servers.Open runs; this package's Open runs
// both. URI says where a workload's test opens a server target.
package captest

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/server"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/target/servers"
	"storebench/internal/workload"
	"storebench/internal/workload/documents"
	"storebench/internal/workload/geo"
	"storebench/internal/workload/http"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/ycsb"
)

// Open opens a registered target as servers.Open does (which checks the
// engine interfaces' capabilities) and checks the layouts' capabilities
// on its handle.
func Open(t servers.T, name string, o target.Options) io.Closer {
	t.Helper()
	h := servers.Open(t, name, o)
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	CheckLayouts(t, info, h)
	return h
}

// CheckCaps checks every capability a target declares against its handle:
// servers.CheckCaps and CheckLayouts.
func CheckCaps(t servers.T, info target.Info, h any) {
	t.Helper()
	servers.CheckCaps(t, info, h)
	CheckLayouts(t, info, h)
}

// CheckLayouts checks that a target declares the capabilities a workload
// finds a layout for on its handle, and no other of them: the
// coordinator matches steps against the declaration, so a wrong one
// would fail a step that was expected to run, or call n/a a step the
// target can run.
func CheckLayouts(t servers.T, info target.Info, h any) {
	t.Helper()
	_, isKV := h.(kv.Store)
	db, isDB := ycsb.Of(h)
	_, isScanner := db.(ycsb.Scanner)
	_, isAttacher := db.(ycsb.Attacher)
	isAttacher = isAttacher && !isKV // an embedded engine is one process's
	_, _, isLedger := ledger.StoreOf(h)
	_, isHTTP := h.(http.Site)
	docs, isDocs := documents.StoreOf(h)
	if c, ok := docs.(io.Closer); ok {
		c.Close()
	}
	closer, _ := h.(io.Closer)
	_, geoErr := geo.StoreOf(closer)
	isGeo := geoErr == nil
	_, isRESP := h.(conn.RESP)
	_, isCQL := h.(conn.CQL)
	_, isPG := h.(conn.Postgres)
	_, isLog := h.(conn.Kafka)
	for _, c := range []struct {
		cap target.Cap
		has bool
	}{
		{target.KeyValue, isKV || isDB},
		{target.OrderedScan, isKV || isDB && isScanner},
		{target.Secondary, isKV || isLedger},
		{target.DocumentStore, isDocs},
		{target.HTTPEndpoint, isHTTP},
		{target.SortedSets, isRESP},
		{target.ClusteredRanges, isCQL},
		{target.SQLArrays, isPG},
		{target.Shared, isAttacher},
		{target.Log, isLog},
	} {
		if info.Provides.Has(c.cap) != c.has {
			t.Errorf("%s declares %s: %v, but its handle %T offers it: %v", info.Name, c.cap, info.Provides.Has(c.cap), h, c.has)
		}
	}
	// The geo steps are planned runnable exactly where a geo layout is
	// found (one per engine feature of geo.RequiresAny).
	why := workload.Step{RequiresAny: geo.RequiresAny}.CannotRunOn(info.Provides)
	if (why == "") != isGeo {
		t.Errorf("%s: geo steps planned runnable: %v (%s), but a geo layout on its handle %T: %v", info.Name, why == "", why, h, isGeo)
	}
}

// URI is where a workload's test opens a server target: on the server
// `make test` shares (or one started for the test; for a target only a
// URI reaches, Aerospike, the one its variable names, else the test is
// skipped), in a place of the test's own where the server's manifest
// names one (testdb=, internal/server/*/manifest.txt), so that tests of
// other packages running at the same time keep theirs: database 9 on
// Redis (other packages' tests use 0), the keyspace storebench_<scope>
// on Cassandra (the target creates it), a database named after scope and
// the time on FerretDB ({time}: dropped when the test ends, since
// FerretDB scans collections for most queries and leftovers would slow
// every later test).
func URI(t *testing.T, name, scope string) string {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if info.ByURIOnly() {
		// Aerospike: no server storebench can start; only one named
		// by STOREBENCH_TEST_AEROSPIKE_URI (else the test is skipped,
		// saying so).
		return servertest.ByURI(t, name, info.URIExample())
	}
	m, err := server.ManifestOf(info.Server)
	if err != nil {
		t.Fatalf("target %s: %v", name, err)
	}
	base := servertest.URI(t, info.Server)
	if m.TestDB == "" {
		return base
	}
	db := strings.ReplaceAll(m.TestDB, "{scope}", scope)
	fresh := strings.Contains(db, "{time}")
	db = strings.ReplaceAll(db, "{time}", strconv.FormatInt(time.Now().UnixNano(), 10))
	uri, err := WithDatabase(base, db)
	if err != nil {
		t.Fatalf("target %s: testdb=%s: %v", name, m.TestDB, err)
	}
	if fresh {
		dropWhenDone(t, base, db)
	}
	return uri
}

// WithDatabase returns uri with the last element of its path (the
// database, keyspace or number a server's URI ends with) replaced by db;
// a query stays as it was.
func WithDatabase(uri, db string) (string, error) {
	rest, query, hasQuery := strings.Cut(uri, "?")
	_, hostPath, ok := strings.Cut(rest, "://")
	slash := strings.LastIndex(rest, "/")
	if !ok || !strings.Contains(hostPath, "/") || db == "" || strings.ContainsAny(db, "/?") {
		return "", fmt.Errorf("cannot name database %q in a URI of the form %s", db, redact.Text(uri))
	}
	out := rest[:slash+1] + db
	if hasQuery {
		out += "?" + query
	}
	return out, nil
}

// droppers drop a database made for one test, by the URI scheme of the
// server it is on.
var droppers = map[string]func(ctx context.Context, base, db string) error{
	"mongodb": dropMongo,
}

// dropWhenDone drops database db of the server at base when the test
// ends.
func dropWhenDone(t *testing.T, base, db string) {
	t.Helper()
	scheme, _, _ := strings.Cut(base, "://")
	drop, ok := droppers[scheme]
	if !ok {
		t.Fatalf("a fresh database per test ({time}) on a %s:// server, but captest knows no way to drop one there (droppers)", scheme)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx, base, db); err != nil {
			t.Errorf("dropping %s: %v", db, err)
		}
	})
}

func dropMongo(ctx context.Context, base, db string) error {
	cl, err := mongo.Connect(options.Client().ApplyURI(base))
	if err != nil {
		return err
	}
	defer cl.Disconnect(ctx)
	return cl.Database(db).Drop(ctx)
}
