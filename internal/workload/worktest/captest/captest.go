// Package captest checks, on an opened target, that the capabilities a
// workload finds through its layouts are the ones the target declares:
// what each registered table of layouts (package workload/layout: ycsb's
// records and scans, ledger's secondary lookups, documents, oltp's SQL,
// geo's) provides on the handle, what the primitives the workloads use
// give (an HTTP site, RESP, CQL, PostgreSQL, Kafka), and data shared
// across worker processes (a ycsb.Attacher); and that each workload's
// steps are planned runnable (its table's Needs against the declaration)
// exactly where its table has a layout on the handle. The
// capabilities that stand for an engine interface of package target, kv
// or ads are checked by servers.CheckCaps, which servers.Open runs; this
// package's Open runs both. URI says where a workload's test opens a
// server target.
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
	_ "storebench/internal/workload/all" // every workload's table of layouts
	"storebench/internal/workload/http"
	"storebench/internal/workload/layout"
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
// target can run. What the layouts give is read from every registered
// table (layout.Tables) and the primitives (primitives); the
// capabilities of the engine interfaces are servers.CheckCaps's to
// compare with the declaration, and here a layout only may not give one
// of them undeclared.
func CheckLayouts(t servers.T, info target.Info, h any) {
	t.Helper()
	found, given := layouts(h)
	engine := servers.EngineCaps(h)
	for _, c := range target.AllCaps {
		declared, by := info.Provides.Has(c), given[c]
		if eng, ok := engine[c]; ok {
			if by != "" && !declared && !eng {
				t.Errorf("%s declares %s: false, but its handle %T offers it: true (%s)", info.Name, c, h, by)
			}
			continue
		}
		if declared != (by != "") {
			t.Errorf("%s declares %s: %v, but its handle %T offers it: %v%s", info.Name, c, declared, h, by != "", paren(by))
		}
	}
	// Each workload's steps are planned runnable (its table's Needs
	// against the declaration) exactly where its table finds a layout.
	for _, e := range layout.Tables() {
		why := e.Needs.CannotRunOn(info.Provides)
		if name, ok := found[e.Workload]; (why == "") != ok {
			t.Errorf("%s: %s steps planned runnable: %v%s, but a %s layout on its handle %T: %v%s",
				info.Name, e.Workload, why == "", paren(why), e.Workload, h, ok, paren(name))
		}
	}
}

// layouts is what the registered tables find on h: each workload's
// layout there by name, and each capability given with what gives it
// ("ycsb layout own", "conn.RESP"). An embedded engine (a kv.Store) is
// one process's, so whatever its tables say it does not give Shared.
func layouts(h any) (found map[string]string, given map[target.Cap]string) {
	found, given = map[string]string{}, map[target.Cap]string{}
	for _, e := range layout.Tables() {
		name, caps, ok := e.Find(h)
		if !ok {
			continue
		}
		found[e.Workload] = name
		for _, c := range caps {
			if given[c] == "" {
				given[c] = e.Workload + " layout " + name
			}
		}
	}
	for _, p := range primitives {
		if p.on(h) {
			for _, c := range p.caps {
				if given[c] == "" {
					given[c] = p.name
				}
			}
		}
	}
	if _, isKV := h.(kv.Store); isKV {
		delete(given, target.Shared)
	}
	return found, given
}

// primitives are the engine primitives that give capabilities whichever
// layout a table prefers on the handle (a target's own YCSB table comes
// before this package's on its RESP client, yet the RESP client's sorted
// sets are there for the geo and tripcache workloads), and those that
// workloads use without a table (an HTTP site, a Kafka log).
var primitives = []struct {
	name string
	on   func(h any) bool
	caps target.Caps
}{
	{"kv.Store", is[kv.Store], target.Caps{target.KeyValue, target.OrderedScan, target.Secondary}},
	{"http.Site", is[http.Site], target.Caps{target.HTTPEndpoint}},
	{"conn.RESP", is[conn.RESP], target.Caps{target.SortedSets}},
	{"conn.CQL", is[conn.CQL], target.Caps{target.ClusteredRanges}},
	{"conn.Postgres", is[conn.Postgres], target.Caps{target.SQLArrays}},
	{"conn.Kafka", is[conn.Kafka], target.Caps{target.Log}},
}

// is says whether h implements P.
func is[P any](h any) bool {
	_, ok := h.(P)
	return ok
}

// paren is " (s)", or "" for an empty s.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
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
