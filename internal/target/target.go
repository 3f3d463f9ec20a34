// Package target is the registry of everything storebench can measure:
// embedded key-value engines (registered through package kv) and clients
// of servers (Redis, PostgreSQL, ...), which register here. A target is
// opened into a handle that offers what its engine has (kv.Store, SQLDB
// with its Dialect, IntSelecter, Pipeliner, conn.RESP, ...); workloads
// find it by type assertion and keep their layouts on it in their own
// packages. Three servers still hold a workload's layout themselves
// (ycsb.DB on Redis, Redis Cluster and memcached): the workload names
// each by its type, and internal/archtest fails on a type here that
// implements a workload's interface without its workload naming it. No
// package here imports internal/workload.
package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"storebench/internal/kv"
	"storebench/internal/redact"
)

// Options open a target.
type Options struct {
	// Dir is an embedded engine's data directory.
	Dir string
	// URI says where a server listens, e.g. redis://127.0.0.1:6379/0. For a
	// managed server the coordinator fills it in after starting the server.
	URI string
	// Durability is the study's durability class; server targets map it
	// onto their client settings (e.g. a write concern) where the server's
	// own configuration does not already enforce it.
	Durability kv.Durability
	// CacheBytes sizes an embedded engine's cache (0: its default).
	CacheBytes int64
	// Extra holds target-specific options from the study.
	Extra map[string]string
	// Concurrency is the most load goroutines any step of the run drives
	// on this target (0: unknown): a server client's default connection
	// pool is at least that large, so that no goroutine waits for a
	// connection (the pool option still sets it explicitly).
	Concurrency int
	// External is set for a server named by URI, one storebench did not
	// start: the target then writes only under its own key prefixes
	// (tables, collections: conn.OwnKeyPrefixes, conn.OwnTables) and its
	// Reset and Cleanup remove only those, never the rest of the
	// database (no FLUSHDB, flush_all or dropped database).
	External bool
}

// Info describes a registered target.
type Info struct {
	Name    string
	Title   string
	Kind    string // "pure-go", "cgo" (embedded) or "server"
	Version string // client library version for servers
	// Unavailable, when non-empty, says why this binary cannot open the
	// target and what would fix it.
	Unavailable string
	OptionNames []string
	// Server names the managed server (package internal/server) that
	// serves this target when the study gives no URI; empty for embedded
	// engines and for targets that can only be external (Aerospike).
	Server string
	// NoServer, for a server target with no Server, says why storebench
	// runs none of its servers (Aerospike: "no package ships its
	// server"), and URIForm the URI that names one
	// ("aerospike://host:port/namespace"): `storebench list` and the
	// error that refuses such a target named without a URI say both.
	NoServer string
	URIForm  string
	// Default is the durability class the engine's own default falls in
	// (kv.Engine.Default): what a study's durability "default" runs it in;
	// DefaultNote says what that default is. Empty: not stated.
	Default     kv.Durability
	DefaultNote string
	// Schemes are the URI schemes that select this target.
	Schemes []string
	// LoneUserSecret are the URI schemes of this target whose lone user
	// information (scheme://SECRET@host, no ':') is a password, masked
	// whole wherever a URI is shown (package redact).
	LoneUserSecret []string
	// ManagedClients, when set, is how many client connections the
	// managed server (Server) accepts (PostgreSQL: max_connections less
	// its superuser reserve): a run whose worker processes × concurrency
	// would open more is refused before anything starts, rather than
	// failing mid-run ("too many clients"). 0: no bound a run reaches.
	ManagedClients int
	// Provides is what this target's handle offers the workloads: each
	// workload step requires some capabilities, and the coordinator runs
	// on a target only the steps whose requirements it provides (the
	// others are "n/a" with the missing capability as the reason).
	Provides Caps
	// Open returns a handle; it must implement io.Closer and usually
	// kv.Describer, plus the workload interfaces it supports.
	Open func(Options) (io.Closer, error)
}

// Cap is one capability a target offers workloads. The set is open: a new
// workload that needs something new adds a Cap here and declares it on
// the targets that have it.
type Cap string

const (
	// KeyValue: single reads, inserts and updates of keys or records,
	// each on its own (not only inside a block).
	KeyValue Cap = "key-value"
	// OrderedScan: read records in key order from a start key.
	OrderedScan Cap = "ordered-scan"
	// Batch: several writes committed atomically as one block.
	Batch Cap = "batch"
	// Secondary: find records by another attribute, in order (a ledger
	// chain's transactions by its genesis address) and keep a view.
	Secondary Cap = "secondary"
	// Pipeline: several requests per round trip (free in-process).
	Pipeline Cap = "pipeline"
	// SQL: SQL statements on tables.
	SQL Cap = "sql"
	// DocumentStore: structured documents with fields, stored and queried
	// as such (MongoDB, PostgreSQL's jsonb, SQLite's JSON functions).
	DocumentStore Cap = "document-store"
	// AuthRoots: a root hash committing to the whole state after each
	// block, with proofs (authenticated data structures).
	AuthRoots Cap = "auth-roots"
	// HTTPEndpoint: an HTTP endpoint that serves pages.
	HTTPEndpoint Cap = "http-endpoint"
	// Compaction: a full compaction of its own on demand (kv.Compacter),
	// e.g. as a background task beside a load.
	Compaction Cap = "compaction"
	// SortedSets: sets ordered by a score, read and trimmed by score
	// ranges (Redis's ZRANGEBYSCORE, ZREMRANGEBYSCORE).
	SortedSets Cap = "sorted-sets"
	// ClusteredRanges: rows clustered in key order within a partition,
	// read and deleted by ranges of the clustering key (Cassandra).
	ClusteredRanges Cap = "clustered-ranges"
	// SQLArrays: SQL array values and set-returning unnest, so one
	// statement carries a batch of rows (PostgreSQL).
	SQLArrays Cap = "sql-arrays"
	// Shared: several worker processes can drive one dataset at once,
	// each attaching to what the first prepared (ycsb.Attacher): what a
	// step split across workers (--workers N, workload.Splitter) needs.
	Shared Cap = "shared"
	// Log: an append-only log of keyed records, produced with an
	// acknowledgement and read back in order from its start (Kafka's
	// topics: conn.Kafka).
	Log Cap = "log"
)

// capText is each capability in words. The words are in reports' n/a
// cells ("n/a: no HTTP"): changing them changes every report that shows
// one.
var capText = map[Cap]string{
	KeyValue:        "single key-value writes",
	OrderedScan:     "ordered scans",
	Batch:           "atomic batches",
	Secondary:       "secondary lookups",
	Pipeline:        "pipelined requests",
	SQL:             "SQL",
	DocumentStore:   "documents",
	AuthRoots:       "authenticated roots",
	HTTPEndpoint:    "HTTP",
	Compaction:      "compaction",
	SortedSets:      "sorted sets",
	ClusteredRanges: "clustered ranges",
	SQLArrays:       "SQL arrays",
	Shared:          "data shared across worker processes",
	Log:             "an append-only log",
}

// AllCaps lists every capability, in the order `storebench list` shows them.
var AllCaps = []Cap{KeyValue, OrderedScan, Batch, Secondary, Pipeline, SQL, DocumentStore, AuthRoots, HTTPEndpoint, Compaction, SortedSets, ClusteredRanges, SQLArrays, Shared, Log}

// String is the capability in words, for reasons and `storebench list`.
func (c Cap) String() string {
	if t, ok := capText[c]; ok {
		return t
	}
	return string(c)
}

// Caps is a set of capabilities.
type Caps []Cap

// Has reports whether c is in the set.
func (cs Caps) Has(c Cap) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// Missing returns the capabilities of need that cs lacks, in need's order.
func (cs Caps) Missing(need Caps) Caps {
	var out Caps
	for _, c := range need {
		if !cs.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// String lists the set in words.
func (cs Caps) String() string {
	var w []string
	for _, c := range cs {
		w = append(w, c.String())
	}
	return strings.Join(w, ", ")
}

// CannotRun says why a target with these capabilities cannot run a step
// that needs need ("" when it can): the step's cell is "n/a: <reason>".
func (cs Caps) CannotRun(need Caps) string {
	return cs.Missing(need).Lack()
}

// CannotRunAny says why a target with these capabilities meets none of
// the alternatives (a workload with a layout on each: "" when it meets
// one, or when there are none): "none of: ordered scans with atomic
// batches, sorted sets, ...".
func (cs Caps) CannotRunAny(alts []Caps) string {
	if len(alts) == 0 {
		return ""
	}
	var w []string
	for _, a := range alts {
		if len(cs.Missing(a)) == 0 {
			return ""
		}
		var words []string
		for _, c := range a {
			words = append(words, c.String())
		}
		w = append(w, strings.Join(words, " with "))
	}
	return "none of: " + strings.Join(w, ", ")
}

// Lack says that these capabilities are missing: "no ordered scans", "no
// SQL, no documents"; "" for none.
func (cs Caps) Lack() string {
	var w []string
	for _, c := range cs {
		w = append(w, "no "+c.String())
	}
	return strings.Join(w, ", ")
}

// EngineCaps is what every embedded key-value engine (kv.Store) provides:
// the workloads build secondary indexes, views and blocks on ordered
// keys and atomic batches (the geo workload its seed's layout), and an
// in-process call needs no pipelining.
var EngineCaps = Caps{KeyValue, OrderedScan, Batch, Secondary, Pipeline}

// Embedded reports whether the target runs inside the worker process.
func (i Info) Embedded() bool { return i.Kind != "server" }

// ByURIOnly reports whether the target is a server storebench runs none
// of (no Server): a study must name one by URI.
func (i Info) ByURIOnly() bool { return !i.Embedded() && i.Server == "" }

// WhyNoServer is NoServer, or a plain default.
func (i Info) WhyNoServer() string {
	if i.NoServer != "" {
		return i.NoServer
	}
	return "it measures only a server named by URI"
}

// URIExample is URIForm, or else a form made from its first scheme.
func (i Info) URIExample() string {
	if i.URIForm != "" || len(i.Schemes) == 0 {
		return i.URIForm
	}
	return i.Schemes[0] + "://host:port/..."
}

// NeedsURI is the error for a target named without a URI that only a
// URI can reach (ByURIOnly): why storebench runs no server of it, and
// the URI to give instead.
func (i Info) NeedsURI() error {
	return fmt.Errorf("%s has no server storebench can start (%s): give it by URI, as %s, in the study's targets or with --targets",
		i.Name, i.WhyNoServer(), i.URIExample())
}

var registry = map[string]Info{}

// Register adds a server target; called from its package's init.
func Register(i Info) {
	if _, dup := registry[i.Name]; dup {
		panic("target registered twice: " + i.Name)
	}
	if i.Open == nil && i.Unavailable == "" {
		panic("target " + i.Name + " has neither Open nor Unavailable")
	}
	if len(i.Provides) == 0 {
		panic("target " + i.Name + " declares no capabilities (Provides)")
	}
	i.Kind = "server"
	redact.AddLoneSecretSchemes(i.LoneUserSecret...)
	registry[i.Name] = i
}

// RegisterEmbedded adds an embedded target that is not a plain kv.Store
// (the authenticated stores of package ads: mpt, iavl, moeingads). Its
// Kind is "pure-go" or "cgo"; it opens in the worker process on a data
// directory like every embedded engine.
func RegisterEmbedded(i Info) {
	if _, dup := registry[i.Name]; dup {
		panic("target registered twice: " + i.Name)
	}
	if i.Open == nil && i.Unavailable == "" {
		panic("target " + i.Name + " has neither Open nor Unavailable")
	}
	if len(i.Provides) == 0 {
		panic("target " + i.Name + " declares no capabilities (Provides)")
	}
	if i.Kind != "pure-go" && i.Kind != "cgo" {
		panic("embedded target " + i.Name + " needs Kind pure-go or cgo")
	}
	registry[i.Name] = i
}

// fromEngine presents an embedded engine as a target.
func fromEngine(e kv.Engine) Info {
	i := Info{Name: e.Name, Title: e.Title, Kind: e.Kind, Version: e.Version, Unavailable: e.Unavailable, OptionNames: e.OptionNames, Provides: EngineCaps,
		Default: e.Default, DefaultNote: e.DefaultNote}
	for _, c := range e.More {
		i.Provides = append(slices.Clip(i.Provides), Cap(c))
	}
	if e.Open != nil {
		open := e.Open
		i.Open = func(o Options) (io.Closer, error) {
			return open(kv.Options{Dir: o.Dir, Durability: o.Durability, CacheBytes: o.CacheBytes, Extra: o.Extra})
		}
	}
	return i
}

// Lookup finds a target by name or by URI scheme.
func Lookup(name string) (Info, error) {
	if scheme, rest, ok := strings.Cut(name, "://"); ok {
		if err := checkPorts(scheme, rest); err != nil {
			return Info{}, err
		}
		for _, i := range All() {
			for _, s := range i.Schemes {
				if s == scheme {
					return i, nil
				}
			}
		}
		return Info{}, fmt.Errorf("no target speaks %s:// (see `storebench list`)", scheme)
	}
	if i, ok := registry[name]; ok {
		return i, nil
	}
	if e, err := kv.Lookup(name); err == nil {
		return fromEngine(e), nil
	}
	// A server's name selects the target it serves: "mariadb" is the mysql
	// target on a managed MariaDB, "ferretdb" the mongodb target on FerretDB.
	for _, i := range registry {
		if i.Server == name {
			return i, nil
		}
	}
	return Info{}, fmt.Errorf("unknown target %q (see `storebench list`)", name)
}

// checkPorts refuses a URI whose hosts name a port outside 1..65535
// (rest is what follows "scheme://"; hosts are comma-separated, as
// MongoDB and Cassandra take them), before anything dials it. The URI
// itself is not quoted: it may carry a password.
func checkPorts(scheme, rest string) error {
	u, err := url.Parse(scheme + "://" + rest)
	if err != nil {
		return nil // the target says what is wrong with it
	}
	for _, host := range strings.Split(u.Host, ",") {
		port := ""
		if strings.HasPrefix(host, "[") {
			if i := strings.Index(host, "]:"); i >= 0 {
				port = host[i+2:]
			}
		} else if i := strings.LastIndex(host, ":"); i >= 0 {
			port = host[i+1:]
		}
		if port == "" {
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%s:// target: port %q: want 1..65535", scheme, port)
		}
	}
	return nil
}

// All returns every target, embedded engines first (kv engines by name,
// then the other embedded targets), then servers by name.
func All() []Info {
	var out []Info
	for _, e := range kv.Engines() {
		out = append(out, fromEngine(e))
	}
	var embedded, servers []Info
	for _, i := range registry {
		if i.Embedded() {
			embedded = append(embedded, i)
		} else {
			servers = append(servers, i)
		}
	}
	sort.Slice(embedded, func(a, b int) bool { return embedded[a].Name < embedded[b].Name })
	sort.Slice(servers, func(a, b int) bool { return servers[a].Name < servers[b].Name })
	return append(append(out, embedded...), servers...)
}

// Resetter is an optional capability of server targets: drop everything
// storebench wrote (tables, keys, collections), so that a ladder step
// that asks for a fresh database gets one. Embedded engines get a fresh
// data directory instead.
type Resetter interface {
	Reset(ctx context.Context) error
}

// Occupant is an optional capability of server targets, asked before a
// run on a server named by URI (Options.External): what its database
// already holds. Foreign counts what lies outside storebench's own key
// prefixes (tables, collections), Own what lies under them (a run would
// overwrite and then delete it); Unit names what is counted ("keys",
// "collections").
type Occupant interface {
	Occupancy(ctx context.Context) (Occupancy, error)
}

// Occupancy is what a server's database holds before a run.
type Occupancy struct {
	Foreign, Own int64
	Unit         string
	// OwnNames says what storebench's own names are (its key prefixes
	// or tables), for the message that refuses the run.
	OwnNames []string
}

// Retrier is an optional capability of server targets whose client
// retries a request the server answered with a timeout (an idempotent
// write: Cassandra's): Retried counts those retries since Open, so that a
// step can say how many it took (results.Step.Retried).
type Retrier interface {
	Retried() int64
}

// Cleaner is an optional capability of server targets: remove what
// storebench wrote on a server named by URI, at the end of a run (also
// an interrupted one). A target without it is cleaned by its Reset.
type Cleaner interface {
	Cleanup(ctx context.Context) error
}

// OpenError wraps a failure to open a server target in one line that
// names the target and the redacted URI, with the password scrubbed from
// the driver's message.
func OpenError(name, uri string, err error) error {
	return fmt.Errorf("%s at %s: %s", name, redact.Text(uri), OneLine(redact.Scrub(uri, err.Error())))
}

// NoAnswer says how long a target waited for a server that did not answer
// in time: a timeout error (a context deadline, a socket deadline, a
// driver's own "timed out") becomes "no answer within BOUND: err", BOUND
// being the bound the target keeps; any other error is returned as is.
func NoAnswer(err error, bound time.Duration) error {
	if err == nil || !isTimeout(err) {
		return err
	}
	if strings.Contains(err.Error(), fmt.Sprintf("within %v", bound)) {
		return err
	}
	return fmt.Errorf("no answer within %v: %w", bound, err)
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "timeout") || strings.Contains(msg, "timed out") || strings.Contains(msg, "deadline exceeded")
}

// OneLine folds a driver's multi-line message (pgx lists every address
// it tried, one per line, often the same line twice) into one line: its
// lines joined by "; ", repeats dropped.
func OneLine(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	var parts []string
	seen := map[string]bool{}
	for _, l := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		parts = append(parts, l)
	}
	out := strings.Join(parts, "; ")
	return strings.ReplaceAll(out, ":; ", ": ")
}
