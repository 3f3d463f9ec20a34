package oltp_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"storebench/internal/kv"
	stdy "storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	_ "storebench/internal/target/servers"
	"storebench/internal/workload"
	"storebench/internal/workload/oltp"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
)

const study = `
name: t
seed: 7
ladder: [%d]
concurrency: 3
targets: [sqlite]
workloads:
  - name: oltp
    params:
      tables: %d
      duration: %s
      client: %s
`

// clients are the two ways of driving the connections (the plain
// sockets of PostgreSQL's and MariaDB's own clients go to event loops
// with "events"; SQLite has none and runs a goroutine per connection
// either way).
var clients = []string{"events", "goroutines"}

func steps(t *testing.T, rows, tables int) map[string]workload.Step {
	return clientSteps(t, rows, tables, "events", "1s")
}

func clientSteps(t *testing.T, rows, tables int, client, duration string) map[string]workload.Step {
	out := map[string]workload.Step{}
	for _, s := range worktest.Plan(t, oltp.OLTP{}, fmt.Sprintf(study, rows, tables, duration, client)) {
		out[s.Phase] = s
	}
	return out
}

func open(t *testing.T, name, uri string) io.Closer {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := info.Open(target.Options{URI: uri, Dir: t.TempDir(), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// sysbench's format of c and pad: groups of 11 digits joined by '-'.
var (
	cFormat   = regexp.MustCompile(`^[0-9]{11}(-[0-9]{11}){9} *$`)
	padFormat = regexp.MustCompile(`^[0-9]{11}(-[0-9]{11}){4} *$`)
)

// sysbenchArgs are sysbench's connection flags for a managed server's URI.
func sysbenchArgs(t *testing.T, driver, uri string) []string {
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	p := "--" + driver
	return []string{"--db-driver=" + driver, p + "-host=" + u.Hostname(), p + "-port=" + u.Port(), p + "-user=" + u.User.Username(),
		p + "-password=" + pw, p + "-db=" + strings.Trim(u.Path, "/")}
}

func sysbench(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("sysbench", args...).CombinedOutput()
	if err != nil {
		// sysbench echoes no password; its output is safe to show.
		t.Fatalf("sysbench %s: %v\n%s", args[0], err, out)
	}
	return string(out)
}

// column describes sbtest1 as the server's catalog has it.
type schema struct {
	columns []string // name type nullable default
	indexes []string
}

func describe(t *testing.T, driver, uri string) schema {
	t.Helper()
	var s schema
	switch driver {
	case "mysql":
		u, _ := url.Parse(uri)
		pw, _ := u.User.Password()
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pw, u.Host, u.Path))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(`SELECT column_name, column_type, is_nullable, COALESCE(column_default, 'NULL'), extra FROM information_schema.columns
			WHERE table_schema = DATABASE() AND table_name = 'sbtest1' ORDER BY ordinal_position`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b, c, d, e string
			rows.Scan(&a, &b, &c, &d, &e)
			s.columns = append(s.columns, strings.Join([]string{a, b, c, d, e}, " "))
		}
		rows.Close()
		rows, err = db.Query(`SELECT index_name, column_name, non_unique FROM information_schema.statistics
			WHERE table_schema = DATABASE() AND table_name = 'sbtest1' ORDER BY index_name, seq_in_index`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b, c string
			rows.Scan(&a, &b, &c)
			s.indexes = append(s.indexes, a+" "+b+" "+c)
		}
		rows.Close()
	case "pgsql":
		conn, err := pgx.Connect(context.Background(), uri)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		rows, _ := conn.Query(context.Background(), `SELECT column_name || ' ' || data_type || ' ' || COALESCE(character_maximum_length::text, '') || ' ' || is_nullable || ' ' || COALESCE(column_default, 'NULL')
			FROM information_schema.columns WHERE table_name = 'sbtest1' ORDER BY ordinal_position`)
		s.columns, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		rows, _ = conn.Query(context.Background(), `SELECT indexdef FROM pg_indexes WHERE tablename = 'sbtest1' ORDER BY indexname`)
		s.indexes, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// counts parses sysbench's "read: / write: / other: / transactions:".
func counts(t *testing.T, out string) (r, w, o, tx float64) {
	t.Helper()
	get := func(label string) float64 {
		m := regexp.MustCompile(`(?m)^\s+` + label + `:\s+(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("sysbench output lacks %s:\n%s", label, out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	return get("read"), get("write"), get("other"), get("transactions")
}

// sysbenchIgnored is the "ignored errors" of sysbench's general
// statistics (deadlocks and the like it retried).
func sysbenchIgnored(out string) float64 {
	m := regexp.MustCompile(`(?m)^\s+ignored errors:\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// sameMix says whether our statements of one kind per transaction (a
// whole number: we retried nothing) are sysbench's. Exact when sysbench's
// own figure is whole. sysbench's statistics sometimes are not, with no
// ignored error reported: under CI load its PostgreSQL write_only once
// showed 3.979 writes and 2.021 other statements a transaction over 94
// transactions, the statements of attempts that failed and were not
// counted as errors. Then its figure may stray by 3%: a transaction that
// lost or gained one statement of a kind (1 of at most 14, 7%) still
// fails.
func sameMix(ours, theirs float64) bool {
	if theirs == float64(int64(theirs)) {
		return ours == theirs
	}
	return ours == float64(int64(ours)) && ours > 0 && (theirs-ours)/ours < 0.03 && (ours-theirs)/ours < 0.03
}

// Against the real sysbench on MariaDB and PostgreSQL: the tables our
// prepare makes have the schema sysbench's prepare makes (columns, types,
// defaults, the primary key and k_1), values in the same formats;
// sysbench itself runs oltp_read_only and oltp_write_only on our tables;
// and our transactions have sysbench's reads, writes and other statements
// per transaction, measured from sysbench's own statistics.
func TestSchemaFormatsAndCountsMatchSysbench(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Fatalf("sysbench is not installed (scripts/install-servers.sh installs it): %v", err)
	}
	for _, c := range []struct{ server, target, driver string }{{"mariadb", "mysql", "mysql"}, {"postgres", "postgres", "pgsql"}} {
		t.Run(c.server, func(t *testing.T) {
			uri := captest.URI(t, c.target, "oltp_test")
			args := append(sysbenchArgs(t, c.driver, uri), "--tables=1", "--table-size=100", "--rand-type=uniform")
			sysbench(t, append([]string{"oltp_read_only", "cleanup"}, args...)...)
			sysbench(t, append([]string{"oltp_read_only", "prepare"}, args...)...)
			theirs := describe(t, c.driver, uri)
			h := open(t, c.target, uri)
			// Their rows in our format check, and (with the connection our
			// workload uses) their c values are well formed.
			conn, err := oltpStore(t, h).OpenConn(context.Background(), 1, false)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			err = conn.Select(context.Background(), oltp.SimpleRange, 1, 1, 100, func(v []byte, _ int64, _ bool) {
				n++
				if !cFormat.Match(v) || oltp.WellFormed(v) != "" {
					t.Errorf("sysbench's c %q: %s", v, oltp.WellFormed(v))
				}
			})
			conn.Close()
			if err != nil || n != 100 {
				t.Fatalf("sysbench's table: %d rows, %v", n, err)
			}
			sysbench(t, append([]string{"oltp_read_only", "cleanup"}, args...)...)

			st := steps(t, 100, 1)
			if _, err := (oltp.OLTP{}).Execute(context.Background(), &workload.Env{Target: h}, st["prepare"]); err != nil {
				t.Fatal(err)
			}
			ours := describe(t, c.driver, uri)
			if fmt.Sprint(ours) != fmt.Sprint(theirs) || len(ours.columns) != 4 || len(ours.indexes) < 2 {
				t.Errorf("schema differs from sysbench's:\nours   %q\ntheirs %q", ours, theirs)
			}
			conn, err = oltpStore(t, h).OpenConn(context.Background(), 1, false)
			if err != nil {
				t.Fatal(err)
			}
			for id := int64(1); id <= 100; id += 33 {
				err := conn.Select(context.Background(), oltp.PointSelect, 1, id, 0, func(v []byte, _ int64, _ bool) {
					want := oltp.FillC(make([]byte, oltp.CLen), 7, 1, id, 0)
					if strings.TrimRight(string(v), " ") != string(want) || !cFormat.Match(v) {
						t.Errorf("row %d: c %q, want %q", id, v, want)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			conn.Close()
			if p := oltp.FillPad(make([]byte, oltp.PadLen), 7, 1, 5, 0); !padFormat.Match(p) {
				t.Errorf("pad %q", p)
			}

			// sysbench runs on our tables; its counts per transaction are
			// ours, on either client.
			for _, phase := range []string{"read_only", "write_only"} {
				out := sysbench(t, append([]string{"oltp_" + phase, "run", "--threads=2", "--time=1"}, args...)...)
				r, w, o, tx := counts(t, out)
				if tx == 0 {
					t.Fatalf("sysbench ran no transaction:\n%s", out)
				}
				for _, client := range clients {
					st := clientSteps(t, 100, 1, client, "1s")[phase]
					st.Params = []byte(strings.Replace(string(st.Params), `"verify":"rows"`, `"verify":"format"`, 1))
					res, err := (oltp.OLTP{}).Execute(context.Background(), &workload.Env{Target: h}, st)
					if err != nil {
						t.Fatal(err)
					}
					m := res.Metrics
					if loops := m["event_loops"]; (loops > 0) != (client == "events") {
						t.Errorf("%s on %s with client %s: %v event loops", phase, c.target, client, loops)
					}
					if m["ignored_errors"] != 0 || sysbenchIgnored(out) != 0 {
						// Either side retried statements after a deadlock or a
						// duplicate key, and retried statements count too: no
						// exact ratio on that side.
						continue
					}
					ops := float64(res.Ops)
					ours := []float64{m["reads"] / ops, m["writes"] / ops, m["other"] / ops}
					theirs := []float64{r / tx, w / tx, o / tx}
					for i, label := range []string{"reads", "writes", "other"} {
						if !sameMix(ours[i], theirs[i]) {
							t.Errorf("%s %s per transaction (client %s): ours %v, sysbench's %v (r/w/o ours %v, sysbench's %v)\n%s",
								phase, label, client, ours[i], theirs[i], ours, theirs, out)
						}
					}
				}
			}
		})
	}
}

// On SQLite (embedded): prepare, read_only and write_only run and verify,
// and a c written to the wrong row (well formed, but its check group is
// another row's) fails read_only naming the table and id.
func TestSQLiteRunsAndCatchesAMisplacedValue(t *testing.T) {
	h := open(t, "sqlite", "")
	st := steps(t, 40, 2)
	ctx := context.Background()
	for _, ph := range []string{"prepare", "read_only", "write_only", "read_only"} {
		res, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st[ph])
		if err != nil {
			t.Fatalf("%s: %v", ph, err)
		}
		if ph == "read_only" && (res.Verify.Checked != 14*res.Ops || res.Ops == 0) {
			t.Fatalf("read_only: %d ops, %d checked", res.Ops, res.Verify.Checked)
		}
	}
	conn, err := oltpStore(t, h).OpenConn(ctx, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	a := oltp.Args{ID: 17, C: oltp.FillC(make([]byte, oltp.CLen), 7, 2, 18, 0)}
	if n, err := conn.Exec(ctx, oltp.NonIndexUpdate, 2, &a); err != nil || n != 1 {
		t.Fatalf("update: %d %v", n, err)
	}
	if err := conn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	_, err = (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st["read_only"])
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "does not belong to this row") {
		t.Fatalf("read_only after a misplaced c: %v", err)
	}
	t.Logf("caught: %v", err)
}

// Values are sysbench's formats, a function of seed, table and id, and
// each c verifies against its own row only.
func TestValueFormats(t *testing.T) {
	c := oltp.FillC(make([]byte, oltp.CLen), 1, 1, 1, 0)
	if !cFormat.Match(c) || oltp.CheckC(c, 1, 1, 1) != "" {
		t.Fatalf("c %q", c)
	}
	if string(oltp.FillC(make([]byte, oltp.CLen), 1, 1, 1, 0)) != string(c) || string(oltp.FillC(make([]byte, oltp.CLen), 1, 1, 2, 0)) == string(c) {
		t.Fatal("c is not a function of the row")
	}
	for _, bad := range []struct {
		seed  uint64
		table int
		id    int64
	}{{2, 1, 1}, {1, 2, 1}, {1, 1, 2}} {
		if oltp.CheckC(c, bad.seed, bad.table, bad.id) == "" {
			t.Errorf("c of (1,1,1) passes as %v", bad)
		}
	}
	padded := append(append([]byte(nil), c...), ' ')
	if oltp.CheckC(padded, 1, 1, 1) != "" {
		t.Error("CHAR padding refused")
	}
	torn := append([]byte(nil), c...)
	torn[5] = 'x'
	if oltp.WellFormed(torn) == "" {
		t.Error("a letter passes")
	}
}

// WellFormed checks eight bytes at a time: every byte value at every
// position of a c is judged as sysbench's format says (a digit in a group,
// '-' between groups), and a refusal names the position.
func TestWellFormedEveryByteEveryPosition(t *testing.T) {
	c := oltp.FillC(make([]byte, oltp.CLen), 3, 1, 9, 0)
	v := make([]byte, len(c))
	for i := range c {
		dash := i%12 == 11
		for b := 0; b < 256; b++ {
			copy(v, c)
			v[i] = byte(b)
			want := b >= '0' && b <= '9' && !dash || b == '-' && dash
			why := oltp.WellFormed(v)
			if (why == "") != want {
				t.Fatalf("byte %#x at %d: WellFormed %q, want ok=%v", b, i, why, want)
			}
			if !want && b != ' ' && !strings.Contains(why, fmt.Sprintf("at %d", i)) {
				t.Fatalf("byte %#x at %d: %q does not name the position", b, i, why)
			}
		}
	}
	if why := oltp.WellFormed(c[:len(c)-1]); why == "" {
		t.Fatal("a short c passes")
	}
}

// The server targets run their statements detached from the caller's
// context and interrupt the connection when it ends: an update blocked
// behind another transaction's row lock (MariaDB would wait 50 s,
// PostgreSQL for ever) returns the context's error soon after it ends, and
// the connection refuses the next statement.
func TestServerConnStopsWhenTheContextEnds(t *testing.T) {
	for _, c := range []struct{ server, target, driver string }{{"mariadb", "mysql", "mysql"}, {"postgres", "postgres", "pgx"}} {
		t.Run(c.server, func(t *testing.T) {
			uri := captest.URI(t, c.target, "oltp_test")
			h := open(t, c.target, uri)
			st := steps(t, 50, 1)
			if _, err := (oltp.OLTP{}).Execute(context.Background(), &workload.Env{Target: h}, st["prepare"]); err != nil {
				t.Fatal(err)
			}
			// Another session holds row 7 of sbtest1.
			db, err := sql.Open(c.driver, dsn(t, c.driver, uri))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.Exec("UPDATE sbtest1 SET k=k+1 WHERE id=7"); err != nil {
				t.Fatal(err)
			}
			conn, err := oltpStore(t, h).OpenConn(context.Background(), 1, true)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithCancel(context.Background())
			if err := conn.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			// The same context has served statements before it ends.
			if n, err := conn.Exec(ctx, oltp.IndexUpdate, 1, &oltp.Args{ID: 8}); err != nil || n != 1 {
				t.Fatalf("update of a free row: %d %v", n, err)
			}
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			_, err = conn.Exec(ctx, oltp.IndexUpdate, 1, &oltp.Args{ID: 7})
			took := time.Since(start)
			if !errors.Is(err, context.Canceled) || errors.Is(err, oltp.ErrIgnorable) || errors.Is(err, oltp.ErrLost) {
				t.Fatalf("blocked update after the context ended: %v (after %v)", err, took)
			}
			if took > 10*time.Second {
				t.Fatalf("the blocked update returned %v after the context ended", took)
			}
			if _, err := conn.Exec(ctx, oltp.IndexUpdate, 1, &oltp.Args{ID: 9}); !errors.Is(err, context.Canceled) {
				t.Fatalf("a statement after the context ended: %v", err)
			}
		})
	}
}

// dsn is a database/sql data source for a managed server's URI.
func dsn(t *testing.T, driver, uri string) string {
	if driver != "mysql" {
		return uri
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pw, u.Host, u.Path)
}

// On the servers, through their own connections (on PostgreSQL on both
// clients, its event loops and a goroutine per connection): read_only
// verifies every row (its checked count is 14 a transaction), every
// transaction counts sysbench's statements exactly (14 reads and 2 others
// for read_only; 4 writes and 2 others for write_only, when nothing was
// retried) in the totals and in the per-tick counts, and a c written to
// the wrong row fails read_only, naming the table and id.
func TestServerRunsCatchAMisplacedValue(t *testing.T) {
	for _, c := range []struct{ server, target, client string }{{"mariadb", "mysql", "events"}, {"mariadb", "mysql", "goroutines"}, {"postgres", "postgres", "events"}, {"postgres", "postgres", "goroutines"}} {
		t.Run(c.server+"/"+c.client, func(t *testing.T) {
			h := open(t, c.target, captest.URI(t, c.target, "oltp_test"))
			st := clientSteps(t, 300, 2, c.client, "1s")
			ctx := context.Background()
			for _, ph := range []string{"prepare", "read_only", "write_only", "read_only"} {
				res, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st[ph])
				if err != nil {
					t.Fatalf("%s: %v", ph, err)
				}
				if ph == "prepare" {
					continue
				}
				m, ops := res.Metrics, float64(res.Ops)
				if loops := m["event_loops"]; (loops > 0) != (c.client == "events") {
					t.Errorf("%s with client %s: %v event loops", ph, c.client, loops)
				}
				if ph == "read_only" && (res.Verify.Checked != 14*res.Ops || res.Ops == 0 || m["reads"] != 14*ops || m["other"] != 2*ops || m["writes"] != 0) {
					t.Fatalf("read_only: %d ops, %d checked, %v reads, %v writes, %v other", res.Ops, res.Verify.Checked, m["reads"], m["writes"], m["other"])
				}
				if ph == "write_only" && (res.Ops == 0 || m["writes"] < 4*ops || m["reads"] != 0 ||
					m["ignored_errors"] == 0 && (m["writes"] != 4*ops || m["other"] != 2*ops)) {
					t.Fatalf("write_only: %d ops, %v writes, %v other, %v ignored errors", res.Ops, m["writes"], m["other"], m["ignored_errors"])
				}
				// The per-tick counts add up to the totals.
				var sum = map[string]float64{}
				for _, tick := range res.Series {
					for _, name := range []string{"reads", "writes", "other", "errors"} {
						sum[name] += float64(tick.Counts[name])
					}
				}
				if len(res.Series) == 0 || sum["reads"] != m["reads"] || sum["writes"] != m["writes"] || sum["other"] != m["other"] || sum["errors"] != m["ignored_errors"] {
					t.Fatalf("%s: per-tick counts %v over %d ticks, totals %v", ph, sum, len(res.Series), m)
				}
			}
			conn, err := oltpStore(t, h).OpenConn(ctx, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			// Every row of table 2 gets the c of its neighbour.
			if err := conn.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			for id := int64(1); id <= 300; id++ {
				a := oltp.Args{ID: id, C: oltp.FillC(make([]byte, oltp.CLen), 7, 2, id+1, 0)}
				if n, err := conn.Exec(ctx, oltp.NonIndexUpdate, 2, &a); err != nil || n != 1 {
					t.Fatalf("update: %d %v", n, err)
				}
			}
			if err := conn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			_, err = (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st["read_only"])
			var ve *workload.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), "does not belong to this row") || !strings.HasPrefix(string(ve.Key), "sbtest2 id ") {
				t.Fatalf("read_only after misplaced c values: %v", err)
			}
			t.Logf("caught: %v", err)
		})
	}
}

// On PostgreSQL's event loops, a backend terminated under a running
// read_only (pg_terminate_backend) fails the run within seconds, naming
// the connection and quoting the server's FATAL (the event client does
// not reconnect). Only this test's sessions are killed (their own
// application_name).
func TestPostgresEventsTerminatedBackendFailsTheRun(t *testing.T) {
	uri := captest.URI(t, "postgres", "oltp_test")
	db, err := sql.Open("pgx", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "sbevkilltest")
	u.RawQuery = q.Encode()
	h := open(t, "postgres", u.String())
	st := clientSteps(t, 200, 1, "events", "60s")
	ctx := context.Background()
	if _, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st["prepare"]); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		err   error
		loops float64
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st["read_only"])
		var loops float64
		if res != nil {
			loops = res.Metrics["event_loops"]
		}
		done <- outcome{err, loops}
	}()
	time.Sleep(700 * time.Millisecond)
	var killed int
	if err := db.QueryRow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'sbevkilltest' AND pid <> pg_backend_pid()").Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminating the test's sessions: %d, %v", killed, err)
	}
	start := time.Now()
	select {
	case o := <-done:
		t.Logf("after %v: %v", time.Since(start), o.err)
		// The server's FATAL (57P01) when it reached us before the
		// close; when the close came as a reset (a request of ours
		// arrived after it), the kernel drops what was unread with it.
		if o.err == nil || !regexp.MustCompile(`connection [0-9]+: the server closed the connection`).MatchString(o.err.Error()) ||
			!strings.Contains(o.err.Error(), "57P01") && !strings.Contains(o.err.Error(), "connection reset") {
			t.Fatalf("read_only with its backends terminated: %v, want a failure naming the connection and the server's FATAL or its reset", o.err)
		}
		if o.loops < 1 {
			t.Fatalf("read_only ran on %v event loops, want the event client", o.loops)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read_only still running 10 s after its backends were terminated")
	}
}

// On MariaDB's event loops, a session killed under a running read_only
// (KILL from another connection) fails the run within seconds, naming
// the connection (the event client does not reconnect). Only this test's
// sessions are killed (other packages share the server and its one
// user): the run connects through a relay of the test's, whose sockets
// to the server name the sessions in the process list (their ports).
func TestMariaDBEventsKilledSessionFailsTheRun(t *testing.T) {
	uri := captest.URI(t, "mysql", "oltp_test")
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pw, u.Host, u.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	ports := map[string]bool{} // the relay's local ends towards the server
	server := u.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			ports[s.LocalAddr().String()] = true
			mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	h := open(t, "mysql", u.String())
	st := clientSteps(t, 200, 1, "events", "60s")
	ctx := context.Background()
	if _, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st["prepare"]); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(ports) // the pool's: only the run's sessions are killed
	mu.Unlock()
	type outcome struct {
		err   error
		loops float64
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st["read_only"])
		var loops float64
		if res != nil {
			loops = res.Metrics["event_loops"]
		}
		done <- outcome{err, loops}
	}()
	time.Sleep(700 * time.Millisecond)
	rows, err := db.Query("SELECT id, host FROM information_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var host string
		if err := rows.Scan(&id, &host); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if ports[host] {
			ids = append(ids, id)
		}
		mu.Unlock()
	}
	rows.Close()
	if len(ids) == 0 {
		t.Fatal("no session of the run's in the process list")
	}
	// The first kill fails the run, which then closes its other
	// sessions: one already gone by its turn is "Unknown thread id"
	// (MySQL error 1094), not a failure of the test (seen in CI on a
	// loaded machine, where the run closed them between two KILLs).
	killed := 0
	for _, id := range ids {
		_, err := db.Exec(fmt.Sprintf("KILL %d", id))
		var me *mysql.MySQLError
		switch {
		case err == nil:
			killed++
		case errors.As(err, &me) && me.Number == 1094 && killed > 0:
		default:
			t.Fatalf("KILL %d: %v", id, err)
		}
	}
	start := time.Now()
	select {
	case o := <-done:
		t.Logf("after %v (%d of %d sessions killed, the others gone with the run): %v", time.Since(start), killed, len(ids), o.err)
		if o.err == nil || !regexp.MustCompile(`connection [0-9]+`).MatchString(o.err.Error()) {
			t.Fatalf("read_only with its sessions killed: %v, want a failure naming the connection", o.err)
		}
		if o.loops < 1 {
			t.Fatalf("read_only ran on %v event loops, want the event client", o.loops)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read_only still running 10 s after its sessions were killed")
	}
}

// A session the server kills is a lost connection (counted as sysbench's
// reconnects), not a failure of the run, and Reconnect brings the
// connection back with its statements prepared again. PostgreSQL, whose
// client reads the replies itself (target/postgres leanConn); only this
// test's sessions are killed (its own application_name): other packages
// share the server.
func TestPostgresKilledSessionIsALostConnection(t *testing.T) {
	uri := captest.URI(t, "postgres", "oltp_test")
	db, err := sql.Open("pgx", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "sbkilltest")
	u.RawQuery = q.Encode()
	h := open(t, "postgres", u.String())
	st := steps(t, 50, 1)
	if _, err := (oltp.OLTP{}).Execute(context.Background(), &workload.Env{Target: h}, st["prepare"]); err != nil {
		t.Fatal(err)
	}
	conn, err := oltpStore(t, h).OpenConn(context.Background(), 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if n, err := conn.Exec(ctx, oltp.IndexUpdate, 1, &oltp.Args{ID: 8}); err != nil || n != 1 {
		t.Fatalf("update before the kill: %d %v", n, err)
	}
	var killed int
	if err := db.QueryRow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'sbkilltest'").Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminating the test's sessions: %d, %v", killed, err)
	}
	var lost error
	for i := 0; i < 50 && lost == nil; i++ {
		_, lost = conn.Exec(ctx, oltp.IndexUpdate, 1, &oltp.Args{ID: 8})
		time.Sleep(20 * time.Millisecond)
	}
	if !errors.Is(lost, oltp.ErrLost) {
		t.Fatalf("a statement on the killed session: %v, want a lost connection", lost)
	}
	if err := conn.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Exec(ctx, oltp.IndexUpdate, 1, &oltp.Args{ID: 8}); err != nil || n != 1 {
		t.Fatalf("update after the reconnect: %d %v", n, err)
	}
}

// Retries count as on sysbench, on both clients and both servers: on 4
// rows, 4 connections' write_only transactions meet each other's
// delete+insert of one id (a unique violation, PostgreSQL's 23505) and
// deadlocks (PostgreSQL's 40P01, MariaDB's 1213), which are ignored
// errors: each rolls back and runs the transaction
// again (its BEGIN counted again: other is exactly 2 a transaction plus
// one per ignored error), the run succeeds, and the rows written verify.
func TestIgnorableErrorsAreRetried(t *testing.T) {
	for _, c := range []struct{ server, target, client string }{{"postgres", "postgres", "events"}, {"postgres", "postgres", "goroutines"}, {"mariadb", "mysql", "events"}, {"mariadb", "mysql", "goroutines"}} {
		client := c.client
		t.Run(c.server+"/"+client, func(t *testing.T) {
			h := open(t, c.target, captest.URI(t, c.target, "oltp_test"))
			st := map[string]workload.Step{}
			for _, s := range worktest.Plan(t, oltp.OLTP{}, fmt.Sprintf(`
name: t
seed: 7
ladder: [4]
concurrency: 4
targets: [%s]
workloads:
  - name: oltp
    params:
      tables: 1
      range_size: 2
      duration: 2s
      client: %s
`, c.target, client)) {
				st[s.Phase] = s
			}
			ctx := context.Background()
			for _, ph := range []string{"prepare", "write_only", "read_only"} {
				res, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st[ph])
				if err != nil {
					t.Fatalf("%s: %v", ph, err)
				}
				m, ops := res.Metrics, float64(res.Ops)
				t.Logf("%s: %v transactions, %v writes, %v other, %v ignored errors, %v event loops", ph, ops, m["writes"], m["other"], m["ignored_errors"], m["event_loops"])
				if ph != "write_only" {
					continue
				}
				if (m["event_loops"] > 0) != (client == "events") {
					t.Errorf("%v event loops with client %s", m["event_loops"], client)
				}
				if ops == 0 || m["ignored_errors"] == 0 || m["writes"] < 4*ops || m["other"] != 2*ops+m["ignored_errors"] || m["reconnects"] != 0 {
					t.Fatalf("write_only on 4 rows: %v transactions, %v writes, %v other, %v ignored errors, %v reconnects", ops, m["writes"], m["other"], m["ignored_errors"], m["reconnects"])
				}
			}
		})
	}
}

// oltpStore is the oltp layout on h.
func oltpStore(t testing.TB, h any) oltp.Store {
	s, ok := oltp.StoreOf(h)
	if !ok {
		t.Fatalf("%T offers no oltp layout", h)
	}
	return s
}

// rand_type special (sysbench's default, the seed's) runs every phase
// with its checks, and each step says how its ids were drawn; an unknown
// rand_type is refused before anything runs.
func TestSpecialRunsAndSaysSo(t *testing.T) {
	h := open(t, "sqlite", "")
	st := map[string]workload.Step{}
	for _, s := range worktest.Plan(t, oltp.OLTP{}, fmt.Sprintf(study, 1000, 2, "1s", "goroutines"), "oltp.rand_type=special") {
		st[s.Phase] = s
	}
	ctx := context.Background()
	for _, ph := range []string{"prepare", "read_only", "write_only", "read_only"} {
		res, err := (oltp.OLTP{}).Execute(ctx, &workload.Env{Target: h}, st[ph])
		if err != nil {
			t.Fatalf("%s: %v", ph, err)
		}
		if !strings.HasPrefix(res.Facts["ids"], "special, sysbench 1.0's default (--rand-type=special --rand-spec-pct=1 --rand-spec-res=75)") {
			t.Fatalf("%s: ids drawn %q", ph, res.Facts["ids"])
		}
		if ph == "read_only" && (res.Verify.Checked != 14*res.Ops || res.Ops == 0) {
			t.Fatalf("read_only: %d ops, %d checked", res.Ops, res.Verify.Checked)
		}
	}
	s, err := stdy.Parse("t.yaml", []byte(fmt.Sprintf(study, 1000, 2, "1s", "events")))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(stdy.Override{Set: []string{"oltp.rand_type=gaussian"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := (oltp.OLTP{}).DecodeParams(sweep.PlanningOf(s), s.Workloads[0]); err == nil || !strings.Contains(err.Error(), "want uniform or special") {
		t.Fatalf("rand_type gaussian: %v", err)
	}
}

// Every step records item_bytes, one sysbench row as written: id and k
// (INTEGERs, 4 bytes each), c (ten groups of 11 digits joined by '-',
// in a CHAR(120)) and pad (five such groups, in a CHAR(60)).
func TestItemBytesIsOneRow(t *testing.T) {
	want := float64(4 + 4 + (10*11 + 9) + (5*11 + 4))
	if c, pad := oltp.FillC(make([]byte, oltp.CLen), 7, 1, 1, 0), oltp.FillPad(make([]byte, oltp.PadLen), 7, 1, 1, 0); !cFormat.Match(c) || !padFormat.Match(pad) {
		t.Fatalf("c %q, pad %q: not sysbench's formats", c, pad)
	}
	h := open(t, "sqlite", "")
	st := clientSteps(t, 30, 2, "goroutines", "300ms")
	for _, ph := range []string{"prepare", "read_only", "write_only"} {
		res, err := (oltp.OLTP{}).Execute(context.Background(), &workload.Env{Target: h}, st[ph])
		if err != nil {
			t.Fatalf("%s: %v", ph, err)
		}
		if got, ok := res.Metrics[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", ph, got, ok, want)
		}
	}
	// The rows in the tables hold that: two 4-byte INTEGERs, c and pad.
	db := sql.OpenDB(h.(target.SQLDriver).SQLConnector())
	defer db.Close()
	for _, table := range []string{"sbtest1", "sbtest2"} {
		var rows, chars int64
		if err := db.QueryRow("SELECT count(*), sum(length(c) + length(pad)) FROM "+table).Scan(&rows, &chars); err != nil {
			t.Fatal(err)
		}
		if rows < 30 || float64(4+4)+float64(chars)/float64(rows) != want {
			t.Errorf("%s: %d rows of %d characters of c and pad, want rows of %v bytes", table, rows, chars, want)
		}
	}
}
