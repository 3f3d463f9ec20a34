package coordinator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"storebench/internal/kv"
	_ "storebench/internal/server/all"
	"storebench/internal/server/servertest"
	"storebench/internal/study"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	"storebench/internal/workload/worktest/captest"
	"storebench/internal/workload/ycsb"
)

// foreign is a server holding someone else's data: seed writes it, left
// counts how much of it is still there (want: all of it).
type foreign struct {
	uri  string
	n    int
	seed func(t *testing.T)
	left func(t *testing.T) int
}

// A server named by URI that holds data storebench did not write: the
// run is refused before anything runs unless --allow-nonempty names it;
// with it, Init, Reset (a fresh ladder step) and Cleanup (the run's end)
// leave the foreign data whole and remove the run's own records (issue
// 33, item 1: FLUSHDB, flush_all).
func TestExternalServerKeepsForeignData(t *testing.T) {
	for _, name := range []string{"redis", "redis-cluster", "memcached", "mongodb", "cassandra"} {
		t.Run(name, func(t *testing.T) {
			info, err := target.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if info.Open == nil {
				t.Fatalf("%s not built in (make test builds every target): %s", name, info.Unavailable)
			}
			f := foreignOn(t, name, info)
			f.seed(t)
			s, err := study.Parse("external.yaml", []byte(fmt.Sprintf(`name: external
durability: async
ladder: [10]
targets: [%q]
workloads:
  - name: ycsb
    params: {workloads: [c], operations: 10, fields: 2, field_length: 16}
`, f.uri)))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Prepare(s)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// (a) refused without --allow-nonempty, naming the flag.
			err = CheckExternal(ctx, s, plan, nil)
			var se *study.Error
			if err == nil || !strings.Contains(err.Error(), "storebench did not write") || !strings.Contains(err.Error(), "--allow-nonempty "+s.Targets[0].Name) {
				t.Fatalf("a server holding foreign data: CheckExternal = %v, want the refusal naming --allow-nonempty", err)
			} else if !asStudyError(err, &se) {
				t.Errorf("refusal %T is not a study error (exit 2)", err)
			}
			if err := CheckExternal(ctx, s, plan, []string{name}); err != nil {
				t.Fatalf("--allow-nonempty %s: %v", name, err)
			}
			// (b) beside the foreign data: the run's records go, theirs stay.
			h, err := info.Open(target.Options{URI: f.uri, Durability: kv.Async, External: true, Concurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			write := func(what string) {
				t.Helper()
				db, ok := ycsb.Of(h)
				if !ok {
					t.Fatalf("%T offers no ycsb.DB", h)
				}
				if err := db.Init(ctx, 2); err != nil {
					t.Fatalf("%s: Init: %v", what, err)
				}
				if n := f.left(t); n != f.n {
					t.Fatalf("%s: Init left %d of the %d foreign items", what, n, f.n)
				}
				for i := range 20 {
					if err := db.Insert(ctx, fmt.Appendf(nil, "user%020d", i*7919), [][]byte{[]byte("a"), []byte("b")}); err != nil {
						t.Fatalf("%s: Insert: %v", what, err)
					}
				}
				if err := CheckExternal(ctx, s, plan, []string{name}); err == nil || !strings.Contains(err.Error(), "storebench's own names") {
					t.Errorf("%s: own records present: CheckExternal = %v, want a refusal naming storebench's own names", what, err)
				}
			}
			gone := func(what string) {
				t.Helper()
				if n := f.left(t); n != f.n {
					t.Errorf("%s left %d of the %d foreign items", what, n, f.n)
				}
				o, err := h.(target.Occupant).Occupancy(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if o.Own != 0 || o.Foreign != int64(f.n) {
					t.Errorf("after %s: %d own %s left, %d foreign (want 0, %d)", what, o.Own, o.Unit, o.Foreign, f.n)
				}
			}
			write("a ladder step")
			if err := h.(target.Resetter).Reset(ctx); err != nil {
				t.Fatal(err)
			}
			gone("Reset")
			write("the last step")
			if err := h.(target.Cleaner).Cleanup(ctx); err != nil {
				t.Fatal(err)
			}
			gone("Cleanup")
			if err := CheckExternal(ctx, s, plan, []string{s.Targets[0].URI}); err != nil {
				t.Errorf("--allow-nonempty URI after the cleanup: %v", err)
			}
		})
	}
}

func asStudyError(err error, se **study.Error) bool {
	e, ok := err.(*study.Error)
	*se = e
	return ok
}

// foreignOn starts (or finds) a server of the target and says what
// foreign data it is given.
func foreignOn(t *testing.T, name string, info target.Info) foreign {
	switch name {
	case "redis":
		uri := strings.TrimSuffix(servertest.Start(t, info.Server, kv.Async).URI, "/0") + "/2"
		opt, err := redis.ParseURL(uri)
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(opt)
		t.Cleanup(func() { c.Close() })
		keys := []string{"customer:1", "orders:9", "precious"}
		return foreign{uri: uri, n: len(keys), seed: func(t *testing.T) {
			for _, k := range keys {
				if err := c.Set(context.Background(), k, "theirs", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}, left: func(t *testing.T) int {
			n, err := c.Exists(context.Background(), keys...).Result()
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}}
	case "redis-cluster":
		uri := servertest.Start(t, info.Server, kv.Async).URI
		s := strings.TrimPrefix(uri, "redis-cluster://")
		var password string
		if at := strings.LastIndex(s, "@"); at >= 0 {
			password, s = strings.TrimPrefix(s[:at], ":"), s[at+1:]
		}
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(strings.TrimSuffix(s, "/"), ","), Password: password})
		t.Cleanup(func() { c.Close() })
		keys := []string{"customer:1", "orders:9", "session:42", "precious"}
		return foreign{uri: uri, n: len(keys), seed: func(t *testing.T) {
			for _, k := range keys {
				if err := c.Set(context.Background(), k, "theirs", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}, left: func(t *testing.T) int {
			n := 0
			for _, k := range keys {
				if c.Exists(context.Background(), k).Val() == 1 {
					n++
				}
			}
			return n
		}}
	case "memcached":
		uri := servertest.Start(t, info.Server, kv.Async).URI
		c := memcache.New(strings.TrimSuffix(strings.TrimPrefix(uri, "memcached://"), "/"))
		keys := []string{"session:42", "cart:7"}
		return foreign{uri: uri, n: len(keys), seed: func(t *testing.T) {
			for _, k := range keys {
				if err := c.Set(&memcache.Item{Key: k, Value: []byte("theirs")}); err != nil {
					t.Fatal(err)
				}
			}
		}, left: func(t *testing.T) int {
			m, err := c.GetMulti(keys)
			if err != nil {
				t.Fatal(err)
			}
			return len(m)
		}}
	case "mongodb":
		uri := captest.URI(t, name, "external")
		cl, err := mongo.Connect(options.Client().ApplyURI(uri))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Disconnect(context.Background()) })
		db := cl.Database(uri[strings.LastIndex(uri, "/")+1:])
		return foreign{uri: uri, n: 2, seed: func(t *testing.T) {
			for _, c := range []string{"customers", "orders"} {
				if _, err := db.Collection(c).InsertOne(context.Background(), bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "theirs"}}); err != nil {
					t.Fatal(err)
				}
			}
		}, left: func(t *testing.T) int {
			n := 0
			for _, c := range []string{"customers", "orders"} {
				k, err := db.Collection(c).CountDocuments(context.Background(), bson.D{})
				if err != nil {
					t.Fatal(err)
				}
				n += int(k)
			}
			return n
		}}
	case "cassandra":
		uri := captest.URI(t, name, "external")
		ks := uri[strings.LastIndex(uri, "/")+1:]
		host := strings.TrimPrefix(uri, "cassandra://")
		host = host[strings.LastIndex(host[:strings.Index(host, "/")], "@")+1 : strings.Index(host, "/")]
		cc := gocql.NewCluster(host)
		if u, p, ok := cassandraUser(uri); ok {
			cc.Authenticator = gocql.PasswordAuthenticator{Username: u, Password: p}
		}
		cc.Timeout, cc.ConnectTimeout = time.Minute, time.Minute
		sess, err := cc.CreateSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = sess.Query(`DROP KEYSPACE IF EXISTS ` + ks).Exec()
			sess.Close()
		})
		return foreign{uri: uri, n: 1, seed: func(t *testing.T) {
			for _, q := range []string{
				`CREATE KEYSPACE IF NOT EXISTS ` + ks + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
				`CREATE TABLE IF NOT EXISTS ` + ks + `.customers (id int PRIMARY KEY, v text)`,
				`INSERT INTO ` + ks + `.customers (id, v) VALUES (1, 'theirs')`,
			} {
				if err := sess.Query(q).Exec(); err != nil {
					t.Fatal(err)
				}
			}
		}, left: func(t *testing.T) int {
			var n int
			if err := sess.Query(`SELECT count(*) FROM ` + ks + `.customers`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}}
	}
	t.Fatalf("no foreign data for %s", name)
	return foreign{}
}

// cassandraUser is the user and password of a cassandra:// URI, if any.
func cassandraUser(uri string) (string, string, bool) {
	rest := strings.TrimPrefix(uri, "cassandra://")
	at := strings.LastIndex(rest[:strings.Index(rest, "/")], "@")
	if at < 0 {
		return "", "", false
	}
	u, p, _ := strings.Cut(rest[:at], ":")
	return u, p, true
}
