// Package mongodb is the storebench target for MongoDB-protocol servers,
// through the official Go driver (v2). The managed server is FerretDB
// (MongoDB itself cannot be installed here); an external mongod works the
// same through a URI.
//
// The workloads' layouts on it (their packages' layout_mongo.go), in
// the URI's database (storebench by default):
//
//	ledger  txs       {_id: address, prev, genesis (binary), idx, ts (int64),
//	                   type (int32), payload (binary)}, index {genesis: 1, idx: 1}
//	        balances  {_id: address, amount (int64, the uint64's bits)}
//	ycsb    usertable {_id: key (string), field0 … (binary)}
//
// An address _id is its hex string by default: FerretDB 1.x pushes a
// filter {_id: string} down into SQL (the collection is still scanned, but
// in SQLite or PostgreSQL, ~20x faster than FerretDB decoding every
// document, which it does for a binary or numeric _id). Option
// address_id=binary stores the 32 bytes as binary, the natural choice on
// MongoDB itself. On FerretDB, Open asks the server to explain that point
// lookup (pointLookup) and Settings say what the plan is.
//
// Documents are built as raw BSON into one buffer per call (no maps, no
// reflection) and read back with raw lookups. PutTxs is one unordered
// InsertMany; transactions already present (a ladder re-inserts the first
// N) are then replaced, upserted by _id. Without multi-document
// transactions (a standalone server has none) a batch is not atomic:
// each document is.
//
// Durability is the write concern: Sync writes with {w: 1, j: true} (the
// server acknowledges once the write is in its journal), Async with
// {w: 1, j: false}.
package mongodb

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the driver release in go.mod (the test checks it).
const moduleVersion = "v2.9.3"

const (
	name        = "mongodb"
	defaultPool = 16
	defaultDB   = "storebench"
	openTimeout = 3 * time.Second
	// chainBatch is the batch size of the ledger layout's chain reads
	// (workload/ledger's layout_mongo.go), for its settings.
	chainBatch = 1000
)

var optionNames = []string{"pool", "address_id"}

func init() {
	register(name, "MongoDB protocol", "ferretdb", []string{"mongodb"}, backendSQLite)
	// The same client on FerretDB's production backend: its own target
	// so that a study names it (`--targets ferretdb-pg`) and its report
	// says what was measured; mongodb:// URIs stay with the target above.
	register("ferretdb-pg", "FerretDB (PostgreSQL backend)", "ferretdb-pg", nil, backendPostgreSQL)
}

// backend is the storage FerretDB runs on, which the managed server
// fixes and buildInfo does not tell: it picks the note on which queries
// use an index.
type backend int

const (
	backendSQLite backend = iota
	backendPostgreSQL
)

// defaults are what each backend's FerretDB does as it ships: the class
// of a study's durability "default" and what it is.
var defaults = map[backend][2]string{
	backendSQLite: {string(kv.Sync), "FerretDB 1.24 on SQLite sets no synchronous pragma: SQLite's default, synchronous=FULL in WAL mode, " +
		"fsyncs each commit (MongoDB, which the seeds ran, defaults to {w: 1, j: false}: its journal is committed every 100 ms)"},
	backendPostgreSQL: {string(kv.Sync), "FerretDB on PostgreSQL: PostgreSQL's default synchronous_commit on fsyncs the WAL at each commit " +
		"(MongoDB, which the seeds ran, defaults to {w: 1, j: false})"},
}

func register(targetName, title, srv string, schemes []string, b backend) {
	target.Register(target.Info{
		Default:     kv.Durability(defaults[b][0]),
		DefaultNote: defaults[b][1],
		Name:        targetName,
		Title:       title,
		Version:     "mongo-go-driver " + moduleVersion,
		OptionNames: optionNames,
		Server:      srv,
		Schemes:     schemes,
		Provides:    target.Caps{target.KeyValue, target.OrderedScan, target.Secondary, target.DocumentStore},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := openOn(o, targetName, b)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}

// Store is an open client. It implements conn.Mongo (the ycsb, ledger
// and documents workloads' own layouts run on its database) and is safe
// for concurrent use.
type Store struct {
	binaryIDs bool // addresses as binary _id rather than hex strings
	client    *mongo.Client
	db        *mongo.Database
	settings  map[string]string
}

// Open connects to o.URI (mongodb://[user:password@]host:port/db).
func Open(o target.Options) (*Store, error) { return openOn(o, name, backendSQLite) }

func openOn(o target.Options, targetName string, b backend) (*Store, error) {
	s, err := open(o, b)
	if err != nil {
		return nil, target.OpenError(targetName, o.URI, err)
	}
	return s, nil
}

func open(o target.Options, b backend) (*Store, error) {
	// One deadline for the whole open, from its start, kept by this
	// wait whatever each step inside takes: on a loaded machine the
	// client's setup before the ping once took seconds, then (with the
	// deadline taken at the start) the setup and the ping together took
	// 6 s while the error said 3 s.
	deadline := time.Now().Add(openTimeout)
	type opened struct {
		s   *Store
		err error
	}
	done := make(chan opened, 1)
	answered := make(chan struct{}) // closed once the server answered a ping
	go func() {
		s, err := openBy(o, b, deadline, answered)
		done <- opened{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-answered:
		// The server is there: what follows has bounds of its own.
		r := <-done
		return r.s, r.err
	case <-time.After(time.Until(deadline) + 250*time.Millisecond):
		select {
		case <-answered:
			r := <-done
			return r.s, r.err
		default:
		}
		go func() {
			if r := <-done; r.s != nil {
				abandon(r.s.client)
			}
		}()
		return nil, fmt.Errorf("no answer within %s", openTimeout)
	}
}

// openBy opens the client and pings the server, by deadline.
func openBy(o target.Options, b backend, deadline time.Time, answered chan<- struct{}) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), "mongodb://host:port/db")
	if err != nil {
		return nil, err
	}
	isSync, extra, pool := sv.Sync, sv.Extra, sv.Pool
	idType, err := extra.Choice("address_id", "hex", "hex", "binary")
	if err != nil {
		return nil, err
	}
	dbName := database(o.URI)
	journal := isSync
	wc := &writeconcern.WriteConcern{W: 1, Journal: &journal}
	opts := options.Client().ApplyURI(o.URI).
		SetServerSelectionTimeout(openTimeout).
		SetConnectTimeout(openTimeout).
		SetMaxPoolSize(uint64(pool)).
		SetMinPoolSize(0).
		SetWriteConcern(wc).
		SetReadPreference(readpref.Primary()).
		SetAppName("storebench")
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// The driver notices the deadline only between handshake attempts,
	// each bounded by the connect timeout: against a silent server the
	// ping can take twice openTimeout. Bound it here.
	pinged := make(chan error, 1)
	go func() { pinged <- client.Ping(ctx, readpref.Primary()) }()
	select {
	case err := <-pinged:
		if err != nil {
			abandon(client)
			return nil, target.NoAnswer(err, openTimeout)
		}
		close(answered)
	case <-time.After(time.Until(deadline) + 250*time.Millisecond):
		go abandon(client)
		return nil, fmt.Errorf("no answer to a ping within %s", openTimeout)
	}
	db := client.Database(dbName)
	s := &Store{binaryIDs: idType == "binary", client: client, db: db}
	version, ferret := serverVersion(ctx, db)
	var note, lookup string
	if ferret {
		note, lookup = ferretNote(b), lookupNote(db)
	}
	s.settings = map[string]string{
		"server":         redact.Text(o.URI),
		"server_version": version,
		"client":         "mongo-go-driver " + moduleVersion + " (raw BSON documents)",
		"durability":     fmt.Sprintf("write concern {w: 1, j: %t}", journal),
		"write_concern":  fmt.Sprintf("w:1 j:%t", journal),
		"pool":           fmt.Sprintf("%d connections (MaxPoolSize)", pool),
		"database":       dbName,
		"layout.ledger":  "txs {_id: address (" + idType + "), prev, genesis bin, idx, ts int64, type int32, payload bin} + index {genesis:1, idx:1}; balances {_id: address (" + idType + "), amount int64}",
		"address_id":     idType,
		"layout.ycsb":    "usertable {_id: key string, field0..fieldN-1 bin}",
		"batch":          "PutTxs, PutBalances: one unordered InsertMany; documents already present are then replaced (upsert by _id); not atomic across documents (no multi-document transaction)",
		"chain_read":     fmt.Sprintf("find {genesis} sorted by idx, batches of %d", chainBatch),
	}
	if note != "" {
		s.settings["server_note"] = note
	}
	if lookup != "" {
		s.settings["point_lookup"] = lookup
	}
	return s, nil
}

// serverVersion asks the server its version by buildInfo, and says whether
// it is FerretDB, which reports a MongoDB version of its own beside its
// own; "unknown" when it does not answer, for the settings to say so.
func serverVersion(ctx context.Context, db *mongo.Database) (version string, ferret bool) {
	version = "unknown"
	var info struct {
		Version         string `bson:"version"`
		FerretDBVersion string `bson:"ferretdbVersion"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err == nil {
		version = info.Version
		ferret = info.FerretDBVersion != ""
		switch info.FerretDBVersion {
		case "":
		case "unknown":
			version = "FerretDB (reports MongoDB " + info.Version + ")"
		default:
			version = "FerretDB " + info.FerretDBVersion + " (reports MongoDB " + info.Version + ")"
		}
	}
	return version, ferret
}

// lookupNote says how FerretDB answers a point lookup by _id, from the
// explain of one, since FerretDB may scan the collection where MongoDB
// uses its _id B-tree, and the results must say so.
func lookupNote(db *mongo.Database) string {
	// A bound of its own: the open's deadline is for reaching the
	// server, which has answered.
	pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	plan, scans, err := pointLookup(pctx, db)
	cancel()
	if err != nil {
		return "not explained: " + err.Error()
	}
	if scans {
		return "FerretDB scans the collection per _id lookup (explain of find {_id: <string>} limit 1: " + plan +
			"): MongoDB answers it from its _id B-tree"
	}
	return "from an index (explain of find {_id: <string>} limit 1: " + plan + ")"
}

// ferretNote says which queries FerretDB 1.x answers from an index on
// each backend, from its source (internal/backends/*/query.go).
func ferretNote(b backend) string {
	if b == backendPostgreSQL {
		return "FerretDB 1.x on PostgreSQL pushes equality filters down as jsonb containment (_jsonb->'f' @> value), " +
			"which its btree indexes on (_jsonb->'f') cannot serve: PostgreSQL scans the table for them, in SQL rather than in FerretDB"
	}
	return "FerretDB 1.x on SQLite pushes only {_id: string or ObjectID} down into SQL, as _ferretdb_sjson->'$._id' = ?, " +
		"which its unique index on _ferretdb_sjson->\"_id\" does not match: every query scans the collection " +
		"(in SQL for that filter, decoding each document in FerretDB for the others)"
}

// probeCollection is where pointLookup explains a point lookup: made with
// one document and dropped again.
const probeCollection = "storebench_probe"

// pointLookup asks the server to explain the layouts' point lookup, a
// find {_id: <string>} with limit 1, on a collection of one document, and
// returns the plan in one line and whether it scans the collection. The
// plan is FerretDB's: SQLite's EXPLAIN QUERY PLAN lines, or PostgreSQL's
// top plan node with its filter; filterPushdown says whether the filter
// reached SQL at all.
func pointLookup(ctx context.Context, db *mongo.Database) (plan string, scans bool, err error) {
	c := db.Collection(probeCollection)
	defer func() { _ = c.Drop(context.WithoutCancel(ctx)) }()
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "probe"}}); err != nil && !mongo.IsDuplicateKeyError(err) {
		return "", false, err
	}
	var ex struct {
		Pushdown *bool `bson:"filterPushdown"`
		Planner  struct {
			Plan bson.RawValue `bson:"Plan"`
		} `bson:"queryPlanner"`
	}
	cmd := bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: probeCollection},
		{Key: "filter", Value: bson.D{{Key: "_id", Value: "probe"}}}, {Key: "limit", Value: 1}}}}
	if err := db.RunCommand(ctx, cmd).Decode(&ex); err != nil {
		return "", false, err
	}
	plan, scans = describePlan(ex.Planner.Plan)
	if ex.Pushdown != nil {
		plan += fmt.Sprintf(", filterPushdown %t", *ex.Pushdown)
	}
	return plan, scans, nil
}

// describePlan reads FerretDB's queryPlanner.Plan: SQLite's plan lines
// ("id=2 parent=0 notused=0 detail=SCAN t") or PostgreSQL's plan node.
func describePlan(v bson.RawValue) (string, bool) {
	switch v.Type {
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		var lines []string
		scans := false
		for _, l := range vals {
			s, _ := l.StringValueOK()
			if _, d, ok := strings.Cut(s, "detail="); ok {
				s = d
			}
			// SQLite: "SCAN t" reads every row; "SEARCH t USING INDEX"
			// or "... USING INTEGER PRIMARY KEY" seeks.
			if strings.HasPrefix(s, "SCAN ") && !strings.Contains(s, "USING") {
				scans = true
			}
			lines = append(lines, s)
		}
		return "SQLite plan \"" + strings.Join(lines, "; ") + "\"", scans
	case bson.TypeEmbeddedDocument:
		doc := v.Document()
		node, _ := doc.Lookup("Node Type").StringValueOK()
		filter, _ := doc.Lookup("Filter").StringValueOK()
		out := "PostgreSQL plan \"" + node
		if filter != "" {
			out += " filter " + filter
		}
		return out + "\"", node == "Seq Scan"
	}
	return "no plan in the answer", false
}

// database is the database a mongodb:// URI names (its path), or
// storebench. The URI may list several hosts, which net/url rejects.
func database(uri string) string {
	_, rest, _ := strings.Cut(uri, "://")
	rest, _, _ = strings.Cut(rest, "?")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	_, path, _ := strings.Cut(rest, "/")
	if path == "" {
		return defaultDB
	}
	if db, err := url.PathUnescape(path); err == nil {
		return db
	}
	return path
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close disconnects.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.client.Disconnect(ctx)
}

// abandon disconnects a client whose open failed without waiting long:
// against a silent server, a clean Disconnect waits for the driver's
// in-flight handshakes and would stretch the one-line failure the user
// waits for past its promised 5 s.
func abandon(c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = c.Disconnect(ctx)
}

// MongoDatabase implements conn.Mongo: the ledger and documents
// workloads' layouts run on the database.
func (s *Store) MongoDatabase() *mongo.Database { return s.db }

// MongoBinaryIDs implements conn.MongoBinaryIDs (option address_id).
func (s *Store) MongoBinaryIDs() bool { return s.binaryIDs }
