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
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
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
// every later test), and on PostgreSQL and MariaDB, created here and
// dropped when the test ends (a fresh step of another package's test
// empties every workload table of the database it runs in, which on the
// server's own database would be this test's). scope must make a
// database name with lower-case letters, digits and underscores only.
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
	if err := checkName(db); err != nil {
		t.Fatalf("target %s: testdb=%s, scope %q: %v", name, m.TestDB, scope, err)
	}
	uri, err := WithDatabase(base, db)
	if err != nil {
		t.Fatalf("target %s: testdb=%s: %v", name, m.TestDB, err)
	}
	if fresh {
		createForTest(t, base, db)
	}
	return uri
}

// maxNameLen is the longest database name PostgreSQL keeps (NAMEDATALEN
// - 1; it would cut a longer one short); MariaDB allows 64.
const maxNameLen = 63

// checkName checks that db is a database name every server takes as it
// is, unquoted: lower-case letters, digits and underscores, at most
// maxNameLen of them.
func checkName(db string) error {
	if db == "" || len(db) > maxNameLen {
		return fmt.Errorf("database name %q: want 1 to %d characters", db, maxNameLen)
	}
	for i := 0; i < len(db); i++ {
		if c := db[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("database name %q: want lower-case letters, digits and underscores only", db)
		}
	}
	return nil
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

// creators create a database for one test before its target connects,
// by the URI scheme of the server: PostgreSQL refuses a connection to a
// database that does not exist; MariaDB's target would create its own,
// but made here a database the user may not create (a server started
// before the user storebench could make storebench_*) fails the test at
// once, naming it. A server missing here makes its database on first
// use (FerretDB).
var creators = map[string]func(ctx context.Context, base, db string) error{
	"postgres": createPostgres,
	"mysql":    createMySQL,
}

// droppers drop a database made for one test, by the URI scheme of the
// server it is on.
var droppers = map[string]func(ctx context.Context, base, db string) error{
	"mongodb":  dropMongo,
	"postgres": dropPostgres,
	"mysql":    dropMySQL,
}

// createForTest creates database db of the server at base where the
// server needs it made (creators), and drops it when the test ends.
func createForTest(t *testing.T, base, db string) {
	t.Helper()
	scheme, _, _ := strings.Cut(base, "://")
	drop, ok := droppers[scheme]
	if !ok {
		t.Fatalf("a fresh database per test ({time}) on a %s:// server, but captest knows no way to drop one there (droppers)", scheme)
	}
	// Registered before the database is made: a create that fails
	// half-way (a timeout after the server made it) leaves nothing.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx, base, db); err != nil {
			t.Errorf("dropping database %s: %s", db, redact.Scrub(base, err.Error()))
		}
	})
	create, ok := creators[scheme]
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := create(ctx, base, db); err != nil {
		t.Fatalf("creating database %s: %s", db, redact.Scrub(base, err.Error()))
	}
}

func dropMongo(ctx context.Context, base, db string) error {
	cl, err := mongo.Connect(options.Client().ApplyURI(base))
	if err != nil {
		return err
	}
	defer cl.Disconnect(ctx)
	return cl.Database(db).Drop(ctx)
}

// pgExec runs one statement on the database of the URI base, as its
// user (on the shared server, storebench, the cluster's superuser).
func pgExec(ctx context.Context, base, stmt string) error {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, stmt)
	return err
}

func createPostgres(ctx context.Context, base, db string) error {
	return pgExec(ctx, base, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
}

// dropPostgres drops db even if a connection of the test's target is
// still open (FORCE ends it): a handle a failed test left unclosed must
// not leave the database behind.
func dropPostgres(ctx context.Context, base, db string) error {
	return pgExec(ctx, base, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
}

// myExec runs one statement on the MariaDB server of the URI base
// (mysql://user:password@host:port/db), as its user, in no database.
func myExec(ctx context.Context, base, stmt string) error {
	u, err := url.Parse(base)
	if err != nil {
		return errors.New("unparsable mysql:// URI")
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", u.Host
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(cn)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// myIdent quotes a MariaDB identifier.
func myIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func createMySQL(ctx context.Context, base, db string) error {
	return myExec(ctx, base, "CREATE DATABASE "+myIdent(db))
}

func dropMySQL(ctx context.Context, base, db string) error {
	return myExec(ctx, base, "DROP DATABASE IF EXISTS "+myIdent(db))
}
