package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

// The statements of TestSQLSession, by handle (prepared in this order).
const (
	hGet = iota
	hSum
	hPut
	hSetC
	hDel
	nStmts
)

var sessionStmts = [nStmts]string{
	hGet:  "SELECT id, k, s, c, b, n FROM sessiontest WHERE id = $1",
	hSum:  "SELECT SUM(k) FROM sessiontest WHERE id BETWEEN $1 AND $2",
	hPut:  "INSERT INTO sessiontest (id, k, s, c, b, n) VALUES ($1, $2, $3, $4, $5, $6)",
	hSetC: "UPDATE sessiontest SET c = $1 WHERE id BETWEEN $2 AND $3",
	hDel:  "DELETE FROM sessiontest WHERE id = $1",
}

// texts is a row's columns as Run gives them, joined by '|' (NULL:
// "NULL").
func texts(cols [][]byte) string {
	var f []string
	for _, v := range cols {
		if v == nil {
			f = append(f, "NULL")
		} else {
			f = append(f, string(v))
		}
	}
	return strings.Join(f, "|")
}

// A SQL session on the lean client: each parameter sent as its type asks
// (int2, int4 and int8 binary, numeric and char as text, bytea binary,
// NULL), every column back in text, the rows a write affected, the
// server's errors classified (a unique violation ignorable, as sysbench
// has it; a NOT NULL violation neither ignorable nor lost) with the
// session in step after them, a terminated backend a lost connection, and
// the same on an event loop's wire, its reply fed one byte at a time, and
// on pgconn over a Unix socket.
func TestSQLSession(t *testing.T) {
	uri := servertest.URI(t, "postgres")
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "sbsessiontest")
	u.RawQuery = q.Encode()
	h := servers.Open(t, "postgres", target.Options{URI: u.String(), Durability: kv.Async})
	defer h.Close()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `DROP TABLE IF EXISTS sessiontest; CREATE TABLE sessiontest (id integer PRIMARY KEY, k bigint, s smallint, c char(6) NOT NULL, b bytea, n numeric);
		INSERT INTO sessiontest VALUES (1, 5, 1, 'a', '\x00ff', 1.5), (2, -3, -2, 'b', NULL, NULL)`, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(ctx, "DROP TABLE IF EXISTS sessiontest", pgx.QueryExecModeSimpleProtocol)
	ss, ok := h.(target.SQLSessioner)
	if !ok {
		t.Fatalf("%T offers no SQL sessions", h)
	}
	open := func(t *testing.T) target.SQLSession {
		t.Helper()
		c, err := ss.OpenSQLSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		for i, q := range sessionStmts {
			if h, err := c.Prepare(ctx, q); err != nil || h != i {
				t.Fatalf("preparing %s: handle %d, %v; want %d", q, h, err, i)
			}
		}
		return c
	}
	query := func(t *testing.T, c target.SQLSession, h int, args ...target.SQLArg) []string {
		t.Helper()
		var got []string
		if _, err := c.Run(ctx, h, args, func(cols [][]byte) error { got = append(got, texts(cols)); return nil }); err != nil {
			t.Fatalf("%s: %v", sessionStmts[h], err)
		}
		return got
	}
	put := []target.SQLArg{target.SQLInt(3), target.SQLInt(1 << 40), target.SQLInt(-7), target.SQLBytes([]byte("ccc")), target.SQLBytes([]byte{1, 2}), target.SQLInt(12)}

	t.Run("Run", func(t *testing.T) {
		c := open(t)
		if _, err := c.Prepare(ctx, "SELECT nosuchcolumn FROM sessiontest"); err == nil || !strings.Contains(err.Error(), "nosuchcolumn") {
			t.Fatalf("preparing a wrong statement: %v", err)
		}
		for _, w := range []struct {
			h    int
			args []target.SQLArg
			want string
		}{
			{hGet, []target.SQLArg{target.SQLInt(1)}, "1|5|1|a     |\x00\xff|1.5"}, // bytea: its bytes
			{hGet, []target.SQLArg{target.SQLInt(2)}, `2|-3|-2|b     |NULL|NULL`},
			{hGet, []target.SQLArg{target.SQLInt(9)}, ``},
			{hSum, []target.SQLArg{target.SQLInt(1), target.SQLInt(2)}, `2`},
			{hSum, []target.SQLArg{target.SQLInt(7), target.SQLInt(8)}, `NULL`},
		} {
			if got := strings.Join(query(t, c, w.h, w.args...), ","); got != w.want {
				t.Errorf("%s %v: %q, want %q", sessionStmts[w.h], w.args, got, w.want)
			}
		}
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Run(ctx, hPut, put, nil); err != nil || n != 1 {
			t.Fatalf("insert: %d, %v", n, err)
		}
		if got := query(t, c, hGet, target.SQLInt(3)); len(got) != 1 || got[0] != "3|1099511627776|-7|ccc   |\x01\x02|12" {
			t.Fatalf("the row inserted: %q", got)
		}
		// A unique violation is ignorable (sysbench retries it); the
		// transaction is then over.
		_, err := c.Run(ctx, hPut, put, nil)
		var pe *pgconn.PgError
		if !errors.Is(err, target.ErrSQLRetry) || !errors.As(err, &pe) || pe.Code != "23505" {
			t.Fatalf("duplicate insert: %v", err)
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Run(ctx, hSetC, []target.SQLArg{target.SQLBytes([]byte("x")), target.SQLInt(1), target.SQLInt(3)}, nil); err != nil || n != 2 {
			t.Fatalf("update of ids 1..3 after the rollback: %d, %v; want 2", n, err)
		}
		// NULL for a NOT NULL column: the server's error, neither
		// ignorable nor lost, and the session goes on.
		_, err = c.Run(ctx, hSetC, []target.SQLArg{target.SQLBytes(nil), target.SQLInt(1), target.SQLInt(1)}, nil)
		if !errors.As(err, &pe) || pe.Code != "23502" || errors.Is(err, target.ErrSQLRetry) || errors.Is(err, target.ErrSQLLost) {
			t.Fatalf("a NULL c: %v", err)
		}
		if _, err := c.Run(ctx, hSetC, []target.SQLArg{target.SQLInt(1), target.SQLInt(1), target.SQLInt(1)}, nil); err != nil {
			t.Fatalf("an integer for a char parameter (sent as text): %v", err)
		}
		if _, err := c.Run(ctx, hGet, []target.SQLArg{target.SQLBytes([]byte("1"))}, nil); err == nil {
			t.Fatal("bytes for an integer parameter: no error")
		}
		if _, err := c.Run(ctx, hGet, nil, nil); err == nil {
			t.Fatal("no parameter for one: no error")
		}
		boom := errors.New("boom")
		if _, err := c.Run(ctx, hGet, []target.SQLArg{target.SQLInt(1)}, func([][]byte) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("a row callback's error: %v", err)
		}
		if got := query(t, c, hGet, target.SQLInt(1)); len(got) != 1 || !strings.HasPrefix(got[0], "1|5|1|1     |") {
			t.Fatalf("after the errors: %q", got)
		}
	})

	t.Run("Wire", func(t *testing.T) {
		c := open(t)
		e, ok := c.(target.EventedSQLSession)
		if !ok || !e.Events() {
			t.Fatal("a session on a plain socket cannot go to an event loop")
		}
		fd, w, err := e.Detach()
		if err != nil {
			t.Fatal(err)
		}
		if e.Events() {
			t.Fatal("a detached session says it can be detached again")
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			t.Fatal(err)
		}
		var in []byte
		buf := make([]byte, 64<<10)
		send := func(req []byte) (got []string, stmtErr error) {
			t.Helper()
			if _, err := unix.Write(fd, req); err != nil {
				t.Fatal(err)
			}
			row := func(cols [][]byte) error { got = append(got, texts(cols)); return nil }
			for end := 0; ; {
				if end == len(in) {
					n, err := unix.Read(fd, buf)
					if err != nil || n == 0 {
						t.Fatalf("read: %d %v", n, err)
					}
					in = append(in, buf[:n]...)
				}
				end++
				n, done, serr, err := w.Reply(in[:end], row)
				if err != nil {
					t.Fatal(err)
				}
				if n > end {
					t.Fatalf("consumed %d of %d bytes", n, end)
				}
				in, end = in[n:], end-n
				if done {
					if len(in) != 0 {
						t.Fatalf("%d bytes after a complete reply", len(in))
					}
					return got, serr
				}
			}
		}
		if _, err := send(w.AppendTx(nil, target.SQLBegin)); err != nil {
			t.Fatal(err)
		}
		// (Run set the c of ids 1 and 2.)
		if got, err := send(w.AppendRun(nil, hGet, []target.SQLArg{target.SQLInt(2)})); err != nil || fmt.Sprint(got) != `[2|-3|-2|x     |NULL|NULL]` {
			t.Fatalf("id 2: %q, %v", got, err)
		}
		if _, err := send(w.AppendRun(nil, hPut, put)); err != nil {
			t.Fatal(err)
		}
		_, err = send(w.AppendRun(nil, hPut, put))
		var pe *pgconn.PgError
		if !errors.Is(err, target.ErrSQLRetry) || !errors.As(err, &pe) || pe.Code != "23505" {
			t.Fatalf("duplicate insert: %v", err)
		}
		if _, err := send(w.AppendTx(nil, target.SQLRollback)); err != nil {
			t.Fatal(err)
		}
		if _, err := send(w.AppendRun(nil, hGet, nil)); err == nil {
			t.Fatal("no parameter for one: no error")
		}
		if got, err := send(w.AppendRun(nil, hGet, []target.SQLArg{target.SQLInt(3)})); err != nil || len(got) != 0 {
			t.Fatalf("id 3 after the rollback: %q, %v", got, err)
		}
		if got, err := send(w.AppendRun(nil, hSum, []target.SQLArg{target.SQLInt(1), target.SQLInt(2)})); err != nil || fmt.Sprint(got) != "[2]" {
			t.Fatalf("SUM: %q, %v", got, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})

	// Over a Unix socket the session stays pgconn's (no event loop), and
	// runs the same: parameters by type, text columns, the server's
	// errors classified.
	t.Run("Pgconn", func(t *testing.T) {
		var dirs string
		if err := admin.QueryRow(ctx, "SHOW unix_socket_directories").Scan(&dirs); err != nil {
			t.Fatal(err)
		}
		// A list setting: an element may be double-quoted (the managed
		// server quotes its directory, which may hold spaces or commas).
		dir, _, _ := strings.Cut(dirs, ",")
		dir = strings.Trim(strings.TrimSpace(dir), `"`)
		if dir == "" {
			t.Fatal("the server listens on no Unix socket: the managed server always does (unix_socket_directories), and a server given to the tests must too")
		}
		su := *u
		q := su.Query()
		q.Set("host", strings.TrimSpace(dir))
		q.Set("port", u.Port())
		su.Host, su.RawQuery = "", q.Encode()
		hs := servers.Open(t, "postgres", target.Options{URI: su.String(), Durability: kv.Async})
		defer hs.Close()
		c, err := hs.(target.SQLSessioner).OpenSQLSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if e, ok := c.(target.EventedSQLSession); ok && e.Events() {
			t.Fatal("a session on a Unix socket says an event loop can drive it")
		}
		for i, q := range sessionStmts {
			if h, err := c.Prepare(ctx, q); err != nil || h != i {
				t.Fatalf("preparing %s: handle %d, %v; want %d", q, h, err, i)
			}
		}
		if got := query(t, c, hGet, target.SQLInt(2)); fmt.Sprint(got) != `[2|-3|-2|x     |NULL|NULL]` {
			t.Fatalf("id 2: %q", got)
		}
		if got := query(t, c, hSum, target.SQLInt(7), target.SQLInt(8)); fmt.Sprint(got) != `[NULL]` {
			t.Fatalf("SUM of no row: %q", got)
		}
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Run(ctx, hPut, put, nil); err != nil || n != 1 {
			t.Fatalf("insert: %d, %v", n, err)
		}
		if got := query(t, c, hGet, target.SQLInt(3)); len(got) != 1 || got[0] != "3|1099511627776|-7|ccc   |\x01\x02|12" {
			t.Fatalf("the row inserted: %q", got)
		}
		_, err = c.Run(ctx, hPut, put, nil)
		var pe *pgconn.PgError
		if !errors.Is(err, target.ErrSQLRetry) || !errors.As(err, &pe) || pe.Code != "23505" {
			t.Fatalf("duplicate insert: %v", err)
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Run(ctx, hDel, []target.SQLArg{target.SQLInt(3)}, nil); err != nil || n != 0 {
			t.Fatalf("delete of id 3 after the rollback: %d, %v", n, err)
		}
	})

	t.Run("Terminated", func(t *testing.T) {
		c := open(t)
		var killed int
		if err := admin.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'sbsessiontest' AND backend_type = 'client backend'").Scan(&killed); err != nil || killed == 0 {
			t.Fatalf("terminating the test's sessions: %d, %v", killed, err)
		}
		var lost error
		for i := 0; i < 50 && lost == nil; i++ {
			_, lost = c.Run(ctx, hGet, []target.SQLArg{target.SQLInt(1)}, nil)
			time.Sleep(20 * time.Millisecond)
		}
		if !errors.Is(lost, target.ErrSQLLost) {
			t.Fatalf("a statement on a terminated backend: %v, want a lost connection", lost)
		}
	})
}
