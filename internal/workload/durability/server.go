package durability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/powerfs"
	"storebench/internal/server"
	"storebench/internal/server/crashable"
	"storebench/internal/target"
	tconn "storebench/internal/target/conn"
	"storebench/internal/workload"
)

// A server target's crash: the server layer starts it on the trial's
// data (package server/crashable, which takes the crash: fault.Crasher),
// and the writers reach it through the target's own handle, by the
// abilities it offers (conn.RESP, target.SQLDB, conn.Kafka,
// target.Pipeliner), as
// every workload does.

// CanCrash says whether the workload can crash target info ("": it can;
// else why not).
func CanCrash(info target.Info) string {
	if info.Embedded() {
		return ""
	}
	if info.Server == "" {
		return fmt.Sprintf("%s: storebench does not run its server, so it cannot crash it", info.Name)
	}
	if _, err := server.Lookup(info.Server); err != nil {
		return fmt.Sprintf("%s: %v", info.Name, err)
	}
	return ""
}

// CrashesTarget implements workload.TargetCrasher: each step crashes
// the target (its phase is the crash kind), on a server of its own
// making, so that the coordinator refuses it on a server named by URI.
func (Durability) CrashesTarget(st workload.Step) string { return st.Phase }

// srvEngine is a server started for one trial, with the target's handle
// on it.
type srvEngine struct {
	srv     *crashable.Server
	opened  *workload.OpenSpec
	info    target.Info
	class   kv.Durability
	h       io.Closer
	writers []writerConn
	ctl     reader
	// singles: the handle has no atomic batch (a pipelined session).
	singles bool
	// kafka is the writers' producer on a Kafka log, kafkaTopic whether
	// its topic was made (by the first open, not after the crash).
	kafka      *kafkaWriter
	kafkaTopic bool
}

// reader reads a record back (kv.ErrNotFound: absent).
type reader interface {
	get(ctx context.Context, key []byte) ([]byte, error)
}

var _ fault.Crasher = (*srvEngine)(nil)

// startServer starts the target's server of trial ts in its directory
// "server" (its data on m when set: a power-loss trial) under the
// trial's class, the target's options passed on to it, its output to
// the log at logPath, and opens a connection for each of its writers.
func startServer(ctx context.Context, ts *trialSpec, m *powerfs.Mount, logPath string) (holder, error) {
	opened, dir, class, writers := ts.opened, filepath.Join(ts.base, "server"), ts.class, ts.p.Writers
	info, err := target.Lookup(opened.Target)
	if err != nil {
		return nil, err
	}
	if why := CanCrash(info); why != "" {
		return nil, errors.New(why)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cfg := server.Config{Dir: dir, Durability: class, Log: logf, Options: opened.Options.Extra}
	srv, err := crashable.Start(ctx, info.Server, cfg, m)
	if err != nil {
		return nil, err
	}
	e := &srvEngine{srv: srv, opened: opened, info: info, class: class}
	if err := e.open(ctx, writers); err != nil {
		_ = srv.Stop(context.Background())
		return nil, err
	}
	return e, nil
}

// open opens the target on the running server and a writer connection
// per writer, by the ability its handle offers.
func (e *srvEngine) open(ctx context.Context, writers int) error {
	opts := e.opened.Options
	opts.URI, opts.Durability, opts.Concurrency = e.srv.URI(), e.class, writers+1
	h, err := e.info.Open(opts)
	if err != nil {
		return fmt.Errorf("opening %s: %w", e.info.Name, err)
	}
	e.h, e.writers, e.ctl = h, nil, nil
	fail := func(err error) error {
		e.closeHandle()
		return err
	}
	switch t := h.(type) {
	case tconn.RESP:
		c := respConn{t.RESPClient()}
		for range writers {
			e.writers = append(e.writers, c)
		}
		e.ctl = c
	case target.SQLDB:
		c, err := newSQLConn(ctx, t)
		if err != nil {
			return fail(err)
		}
		for range writers {
			e.writers = append(e.writers, c)
		}
		e.ctl = c
	case tconn.CQL:
		c, err := newCQLConn(ctx, t)
		if err != nil {
			return fail(err)
		}
		for range writers {
			e.writers = append(e.writers, c)
		}
		e.ctl = &cqlReader{c: c}
	case tconn.Mongo:
		// No multi-document transaction on FerretDB: single records.
		e.singles = true
		c := mongoConn{t.MongoDatabase().Collection("durability")}
		for range writers {
			e.writers = append(e.writers, c)
		}
		e.ctl = c
	case tconn.Kafka:
		// A log: single records, produced and acknowledged one by one.
		e.singles = true
		brokers := t.KafkaBrokers()
		if !e.kafkaTopic {
			if err := makeKafkaTopic(ctx, brokers); err != nil {
				return fail(err)
			}
			e.kafkaTopic = true
		}
		w, err := newKafkaWriter(brokers)
		if err != nil {
			return fail(err)
		}
		e.kafka = w
		for range writers {
			e.writers = append(e.writers, w)
		}
		e.ctl = &kafkaReader{brokers: brokers}
	case target.Pipeliner:
		e.singles = true
		for range writers + 1 {
			s, err := t.NewSession(context.Background())
			if err != nil {
				return fail(err)
			}
			e.writers = append(e.writers, sessionConn{s})
		}
		e.ctl, e.writers = e.writers[writers].(sessionConn), e.writers[:writers]
	default:
		return fail(fmt.Errorf("%s: its handle offers none of RESP, SQL, CQL, MongoDB, a Kafka log or pipelined sessions, which the durability workload writes through", e.info.Name))
	}
	return nil
}

func (e *srvEngine) writer(w int) writerConn { return e.writers[w] }

func (e *srvEngine) get(ctx context.Context, key []byte) ([]byte, error) {
	return e.ctl.get(ctx, key)
}

func (e *srvEngine) exited() <-chan struct{} { return e.srv.Exited() }

// Crash is the server layer's; the writers may still use their
// connections and get an error from the dead server.
func (e *srvEngine) Crash(ctx context.Context, kind string) error {
	err := e.srv.Crash(ctx, kind)
	if e.kafka != nil {
		// The broker is gone: its produces in flight end now rather
		// than being retried until their timeout.
		e.kafka.cancel()
	}
	return err
}

// LastFailure is what the latest power failure dropped.
func (e *srvEngine) LastFailure() powerfs.Failure { return e.srv.LastFailure() }

// Restart starts the server again on its data and opens the target on it.
func (e *srvEngine) Restart(ctx context.Context) error {
	if err := e.srv.Restart(ctx); err != nil {
		return err
	}
	if err := e.open(ctx, len(e.writers)); err != nil {
		_ = e.srv.Stop(context.Background())
		return err
	}
	return nil
}

// release closes the handle once no writer uses it.
func (e *srvEngine) release() { e.closeHandle() }

func (e *srvEngine) close(ctx context.Context) error {
	e.closeHandle()
	return e.srv.Stop(ctx)
}

func (e *srvEngine) persistent() bool { return e.srv.Persistent() }

func (e *srvEngine) mapping() string { return e.srv.Instance().Settings["durability_mapping"] }

func (e *srvEngine) declared() string { return e.srv.Instance().Settings["durability"] }

func (e *srvEngine) promised() time.Duration {
	d, err := time.ParseDuration(e.srv.Instance().Settings[server.FlushInterval])
	if err != nil {
		return 0
	}
	return d
}

// atomicBatches says whether the writers may write atomic batches.
func (e *srvEngine) atomicBatches() bool { return !e.singles }

func (e *srvEngine) closeHandle() {
	for _, c := range e.writers {
		if s, ok := c.(sessionConn); ok {
			_ = s.s.Close()
		}
	}
	if s, ok := e.ctl.(sessionConn); ok {
		_ = s.s.Close()
	}
	if e.kafka != nil {
		e.kafka.close()
		e.kafka = nil
	}
	if e.h != nil {
		_ = e.h.Close()
		e.h = nil
	}
}

// respConn writes a record with SET and a batch with MULTI/EXEC.
type respConn struct{ c *redis.Client }

func (r respConn) write(kvs [][]byte) error {
	ctx := context.Background()
	if len(kvs) == 2 {
		return r.c.Set(ctx, string(kvs[0]), kvs[1], 0).Err()
	}
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < len(kvs); i += 2 {
			p.Set(ctx, string(kvs[i]), kvs[i+1], 0)
		}
		return nil
	})
	return err
}

func (r respConn) get(ctx context.Context, key []byte) ([]byte, error) {
	v, err := r.c.Get(ctx, string(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, kv.ErrNotFound
	}
	return v, err
}

// sqlConn writes a record with an insert and a batch with one multi-row
// insert (one statement: atomic) into table durability, in the target's
// dialect.
type sqlConn struct {
	db   target.SQLDB
	d    target.Dialect
	get1 string
}

func newSQLConn(ctx context.Context, db target.SQLDB) (*sqlConn, error) {
	d := db.SQLDialect()
	ddl := "CREATE TABLE IF NOT EXISTS durability (k bytea PRIMARY KEY, v bytea NOT NULL)"
	switch d.Name {
	case "mysql":
		ddl = "CREATE TABLE IF NOT EXISTS durability (k VARBINARY(64) PRIMARY KEY, v BLOB NOT NULL) ENGINE=InnoDB"
	case "sqlite":
		ddl = "CREATE TABLE IF NOT EXISTS durability (k BLOB PRIMARY KEY, v BLOB NOT NULL)"
	}
	if err := db.ExecDDL(ctx, ddl); err != nil {
		return nil, err
	}
	return &sqlConn{db: db, d: d, get1: "SELECT v FROM durability WHERE k = " + d.Param(1)}, nil
}

// insert is the statement of rows records (the target prepares each
// once: the workload writes two sizes, a record and a batch).
func (s *sqlConn) insert(rows int) string {
	q := "INSERT INTO durability (k, v) VALUES "
	for i := 0; i < rows; i++ {
		if i > 0 {
			q += ", "
		}
		q += "(" + s.d.Param(2*i+1) + ", " + s.d.Param(2*i+2) + ")"
	}
	return q
}

func (s *sqlConn) write(kvs [][]byte) error {
	args := make([]any, len(kvs))
	for i, b := range kvs {
		args[i] = b
	}
	_, err := s.db.Exec(context.Background(), s.insert(len(kvs)/2), args...)
	return err
}

func (s *sqlConn) get(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	found := false
	err := s.db.Query(ctx, s.get1, []any{key}, func(cols [][]byte) bool {
		v, found = append([]byte(nil), cols[0]...), true
		return false
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// cqlConn writes a record with an INSERT and a batch with a logged
// batch (atomic: all of it is applied or none) into table durability of
// the target's keyspace.
type cqlConn struct {
	s        *gocql.Session
	ins, all string
}

func newCQLConn(ctx context.Context, t tconn.CQL) (*cqlConn, error) {
	ks := t.CQLKeyspace()
	s := t.CQLSession()
	if err := s.Query("CREATE TABLE IF NOT EXISTS " + ks + ".durability (k blob PRIMARY KEY, v blob)").WithContext(ctx).Exec(); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	return &cqlConn{s: s, ins: "INSERT INTO " + ks + ".durability (k, v) VALUES (?, ?)", all: "SELECT k, v FROM " + ks + ".durability"}, nil
}

// timedOut: Cassandra's write timeout (the coordinator did not hear
// from the replica in time) or the driver's own.
func (c *cqlConn) timedOut(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	return errors.As(err, &wt) || errors.Is(err, gocql.ErrTimeoutNoResponse)
}

func (c *cqlConn) write(kvs [][]byte) error {
	if len(kvs) == 2 {
		return c.s.Query(c.ins, kvs[0], kvs[1]).Exec()
	}
	b := c.s.Batch(gocql.LoggedBatch)
	for i := 0; i < len(kvs); i += 2 {
		b.Query(c.ins, kvs[i], kvs[i+1])
	}
	return b.Exec()
}

// cqlReader reads the table back once, at the first get, in one paged
// scan: a get per record took Cassandra 6 to 15 minutes for the 100,000
// records a power-loss trial of its periodic commit log writes (three
// 10 s intervals and more), where the scan takes seconds.
type cqlReader struct {
	c       *cqlConn
	mu      sync.Mutex
	records map[string][]byte
}

func (r *cqlReader) get(ctx context.Context, key []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		m, err := r.c.scan(ctx)
		if err != nil {
			return nil, err
		}
		r.records = m
	}
	v, ok := r.records[string(key)]
	if !ok {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// scan reads every record of the table, a page at a time.
func (c *cqlConn) scan(ctx context.Context) (map[string][]byte, error) {
	records := map[string][]byte{}
	it := c.s.Query(c.all).WithContext(ctx).PageSize(cqlScanPage).Iter()
	var k, v []byte
	for it.Scan(&k, &v) {
		records[string(k)] = append([]byte(nil), v...)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: reading the records back: %w", err)
	}
	return records, nil
}

// cqlScanPage is the read-back's page: rows of about 130 bytes.
const cqlScanPage = 5000

// mongoConn writes a record as a document {_id: key, v: value}.
type mongoConn struct{ c *mongo.Collection }

func (m mongoConn) write(kvs [][]byte) error {
	if len(kvs) != 2 {
		return errors.New("no atomic batch of documents here")
	}
	_, err := m.c.InsertOne(context.Background(), bson.D{{Key: "_id", Value: string(kvs[0])}, {Key: "v", Value: kvs[1]}})
	return err
}

func (m mongoConn) get(ctx context.Context, key []byte) ([]byte, error) {
	var doc struct {
		V []byte `bson:"v"`
	}
	err := m.c.FindOne(ctx, bson.D{{Key: "_id", Value: string(key)}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, kv.ErrNotFound
	}
	return doc.V, err
}

// sessionConn writes single records through a pipelined session (a
// memcached set): it has no atomic batch, so the workload writes it no
// batches.
type sessionConn struct{ s target.Session }

func (c sessionConn) write(kvs [][]byte) error {
	if len(kvs) != 2 {
		return errors.New("a pipelined session has no atomic batch")
	}
	return c.s.Set(kvs[:1], kvs[1:])
}

func (c sessionConn) get(_ context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := c.s.Get([][]byte{key}, func(_ int, b []byte) error {
		if b != nil {
			v = append([]byte(nil), b...)
		}
		return nil
	})
	if err == nil && v == nil {
		return nil, kv.ErrNotFound
	}
	return v, err
}
