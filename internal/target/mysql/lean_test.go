package mysql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"storebench/internal/kv"
	_ "storebench/internal/server/mariadb"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
)

// leanTable is the table of these tests (other packages' tests may share
// the server at the same time).
const leanTable = "leantest"

// The statements of these tests, by handle (prepared in this order).
const (
	hSelect = iota
	hRange
	hSum
	hInts
	hInsert
	hIncK
	hSetC
	hDelete
	nStmts
)

var leanStmts = [nStmts]string{
	hSelect: "SELECT c FROM " + leanTable + " WHERE id=?",
	hRange:  "SELECT c FROM " + leanTable + " WHERE id BETWEEN ? AND ? ORDER BY c",
	hSum:    "SELECT SUM(k) FROM " + leanTable + " WHERE id BETWEEN ? AND ?",
	hInts:   "SELECT id, k, CAST(k AS SIGNED) * 3, CAST(id AS UNSIGNED) FROM " + leanTable + " WHERE id=?",
	hInsert: "INSERT INTO " + leanTable + " (id, k, c, pad) VALUES (?, ?, ?, ?)",
	hIncK:   "UPDATE " + leanTable + " SET k=k+1 WHERE id=?",
	hSetC:   "UPDATE " + leanTable + " SET c=? WHERE id=?",
	hDelete: "DELETE FROM " + leanTable + " WHERE id=?",
}

func ints(v ...int64) []target.SQLArg {
	out := make([]target.SQLArg, len(v))
	for i, n := range v {
		out[i] = target.SQLInt(n)
	}
	return out
}

// The SQL sessions on plain TCP are the lean client's: rows parsed from
// the binary protocol reach the caller in text (strings, a DECIMAL SUM,
// integers of every width and sign, NULL for an empty range), writes
// report their affected rows, a killed session is a lost connection, a
// deadlock is ignorable, and a URI with session variables keeps
// go-sql-driver, whose rows come in the same text.
func TestLeanSQLSession(t *testing.T) {
	uri := servertest.URI(t, "mariadb")
	s, err := Open(target.Options{URI: uri, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, q := range []string{"DROP TABLE IF EXISTS " + leanTable,
		"CREATE TABLE " + leanTable + "(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE = InnoDB",
		"INSERT INTO " + leanTable + " (id, k, c, pad) VALUES (1, 5, 'c-1', 'pad-1'), (2, -3, 'c-2', 'pad-2'), (3, 1073741824, 'c-3', 'pad-3')"} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer s.db.Exec("DROP TABLE IF EXISTS " + leanTable)
	prepare := func(t *testing.T, sess target.SQLSession) {
		t.Helper()
		for i, q := range leanStmts {
			h, err := sess.Prepare(ctx, q)
			if err != nil || h != i {
				t.Fatalf("preparing %s: handle %d, %v; want %d", q, h, err, i)
			}
		}
	}
	open := func(t *testing.T) *session {
		t.Helper()
		ss, err := s.OpenSQLSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := ss.(*session)
		t.Cleanup(func() { c.Close() })
		if c.lean == nil {
			t.Fatal("a session on TCP is not the lean client's")
		}
		prepare(t, c)
		return c
	}
	// query runs statement h and returns its rows, each column's text
	// joined by '|' (NULL: "NULL").
	query := func(t *testing.T, c target.SQLSession, h int, args ...int64) []string {
		t.Helper()
		var got []string
		_, err := c.Run(ctx, h, ints(args...), func(cols [][]byte) error {
			var f []string
			for _, v := range cols {
				if v == nil {
					f = append(f, "NULL")
				} else {
					f = append(f, strings.TrimRight(string(v), " "))
				}
			}
			got = append(got, strings.Join(f, "|"))
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", leanStmts[h], err)
		}
		return got
	}
	// rows checks what the sessions return, lean or not.
	rows := func(t *testing.T, c target.SQLSession) {
		t.Helper()
		for _, w := range []struct {
			h    int
			args []int64
			want string
		}{
			{hSelect, []int64{2}, "c-2"},
			{hSelect, []int64{1000}, ""}, // no row, and the next in step
			{hSelect, []int64{3}, "c-3"},
			{hRange, []int64{1, 3}, "c-1,c-2,c-3"},
			{hSum, []int64{1, 3}, fmt.Sprint(5 - 3 + 1<<30)},
			{hSum, []int64{100, 200}, "NULL"},
			{hInts, []int64{2}, "2|-3|-9|2"},
			{hInts, []int64{3}, "3|1073741824|3221225472|3"},
		} {
			if got := strings.Join(query(t, c, w.h, w.args...), ","); got != w.want {
				t.Errorf("%s %v: %q, want %q", leanStmts[w.h], w.args, got, w.want)
			}
		}
	}

	t.Run("Rows", func(t *testing.T) {
		c := open(t)
		// MariaDB leaves out the column definitions the prepare gave.
		if !c.lean.cacheMeta {
			t.Error("MARIADB_CLIENT_CACHE_METADATA not agreed with MariaDB")
		}
		rows(t, c)
		// A row callback's error is Run's, and the session goes on.
		boom := errors.New("boom")
		if _, err := c.Run(ctx, hRange, ints(1, 3), func([][]byte) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("a row callback's error: %v", err)
		}
		if _, err := c.Run(ctx, hSelect, ints(1, 2), nil); err == nil || !strings.Contains(err.Error(), "takes 1 parameters, given 2") {
			t.Fatalf("two parameters for one: %v", err)
		}
		if got := query(t, c, hSelect, 1); len(got) != 1 || got[0] != "c-1" {
			t.Fatalf("after a row callback's error: %q", got)
		}
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		c99 := []byte("c-99")
		for _, w := range []struct {
			h    int
			args []target.SQLArg
			want int64
		}{
			{hInsert, []target.SQLArg{target.SQLInt(99), target.SQLInt(7), target.SQLBytes(c99), target.SQLBytes([]byte("p"))}, 1},
			{hIncK, ints(99), 1},
			// An update that changes nothing still counts its row
			// (CLIENT_FOUND_ROWS, as the driver's).
			{hSetC, []target.SQLArg{target.SQLBytes(c99), target.SQLInt(99)}, 1},
			{hSetC, []target.SQLArg{target.SQLBytes(c99), target.SQLInt(98)}, 0},
			{hDelete, ints(99), 1},
			{hDelete, ints(99), 0},
		} {
			if n, err := c.Run(ctx, w.h, w.args, nil); err != nil || n != w.want {
				t.Fatalf("%s: %d rows, %v; want %d", leanStmts[w.h], n, err, w.want)
			}
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// A duplicate key is an error of the server's, neither ignorable
		// nor a lost connection, and the session goes on.
		_, err := c.Run(ctx, hInsert, []target.SQLArg{target.SQLInt(1), target.SQLInt(0), target.SQLBytes(c99), target.SQLBytes([]byte("p"))}, nil)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 || errors.Is(err, target.ErrSQLRetry) || errors.Is(err, target.ErrSQLLost) {
			t.Fatalf("duplicate insert: %v", err)
		}
		if n, err := c.Run(ctx, hIncK, ints(3), nil); err != nil || n != 1 {
			t.Fatalf("update after an error: %d %v", n, err)
		}
		// A NULL c (the parameter's type NULL) is refused by the NOT NULL
		// column; the next update binds a string again.
		_, err = c.Run(ctx, hSetC, []target.SQLArg{target.SQLBytes(nil), target.SQLInt(3)}, nil)
		if !errors.As(err, &me) || me.Number != 1048 {
			t.Fatalf("update to a NULL c: %v, want error 1048", err)
		}
		for i := 0; i < 2; i++ {
			if n, err := c.Run(ctx, hSetC, []target.SQLArg{target.SQLBytes([]byte("c-3b")), target.SQLInt(3)}, nil); err != nil || n != 1 {
				t.Fatalf("update after a NULL: %d %v", n, err)
			}
		}
		if got := query(t, c, hSelect, 3); len(got) != 1 || got[0] != "c-3b" {
			t.Fatalf("c of id 3 after its update: %q", got)
		}
		// The rows as they were, for the subtests below.
		if _, err := s.db.ExecContext(ctx, "UPDATE "+leanTable+" SET k=1073741824, c='c-3' WHERE id=3"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("KilledSession", func(t *testing.T) {
		c := open(t)
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.ExecContext(ctx, fmt.Sprintf("KILL %d", c.lean.id)); err != nil {
			t.Fatal(err)
		}
		var lost error
		for i := 0; i < 50 && lost == nil; i++ {
			_, lost = c.Run(ctx, hSelect, ints(1), nil)
			time.Sleep(20 * time.Millisecond)
		}
		if !errors.Is(lost, target.ErrSQLLost) {
			t.Fatalf("a statement on the killed session: %v, want a lost connection", lost)
		}
		t.Logf("killed: %v", lost)
	})

	t.Run("Deadlock", func(t *testing.T) {
		a, b := open(t), open(t)
		for _, c := range []*session{a, b} {
			if err := c.Begin(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Run(ctx, hIncK, ints(1), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Run(ctx, hIncK, ints(2), nil); err != nil {
			t.Fatal(err)
		}
		// a waits for b's row; b then asks for a's: InnoDB kills one.
		aerr := make(chan error, 1)
		go func() {
			_, err := a.Run(ctx, hIncK, ints(2), nil)
			aerr <- err
		}()
		time.Sleep(300 * time.Millisecond)
		_, berr := b.Run(ctx, hIncK, ints(1), nil)
		if berr != nil {
			// b was the victim: its rollback frees a.
			if err := b.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var errA error
		select {
		case errA = <-aerr:
		case <-time.After(20 * time.Second):
			t.Fatal("no deadlock detected within 20 s")
		}
		if errA == nil {
			errA = berr
		} else if berr == nil {
			b.Rollback(ctx)
		}
		var me *mysql.MySQLError
		if !errors.Is(errA, target.ErrSQLRetry) || !errors.As(errA, &me) || me.Number != 1213 || errors.Is(errA, target.ErrSQLLost) {
			t.Fatalf("deadlock: %v / %v, want one ignorable 1213", errA, berr)
		}
		t.Logf("deadlock: %v", errA)
		for _, c := range []*session{a, b} {
			if err := c.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})

	// Handed to an event loop, the session's wire writes each statement
	// and parses its reply from bytes as they come (here one more byte at
	// a time: nothing consumed until a packet is whole), as the
	// synchronous path does: rows in text, SUM and NULL, the server's
	// errors classified, and the parameters' types sent on a statement's
	// first execute only.
	t.Run("Wire", func(t *testing.T) {
		c := open(t)
		if !c.Events() {
			t.Fatal("a lean session cannot go to an event loop")
		}
		wantSum := query(t, c, hSum, 1, 3)
		fd, w, err := c.Detach()
		if err != nil {
			t.Fatal(err)
		}
		if c.Events() {
			t.Fatal("a detached session says it can be detached again")
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			t.Fatal(err)
		}
		var in []byte
		buf := make([]byte, 64<<10)
		// send writes req and reads its reply; got is what the row
		// callback got (columns joined by '|').
		send := func(req []byte) (got []string, stmtErr error) {
			t.Helper()
			if _, err := unix.Write(fd, req); err != nil {
				t.Fatal(err)
			}
			row := func(cols [][]byte) error {
				var f []string
				for _, v := range cols {
					if v == nil {
						f = append(f, "NULL")
					} else {
						f = append(f, strings.TrimRight(string(v), " "))
					}
				}
				got = append(got, strings.Join(f, "|"))
				return nil
			}
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
				if n > 0 && (n < 4 || n > end) {
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
		run := func(h int, args ...target.SQLArg) ([]string, error) {
			t.Helper()
			return send(w.AppendRun(nil, h, args))
		}
		if _, err := send(w.AppendTx(nil, target.SQLBegin)); err != nil {
			t.Fatal(err)
		}
		st := &w.(*leanWire).l.stmts[hSelect]
		st.typed = false
		for i, id := range []int64{2, 1, 1000} {
			req := w.AppendRun(nil, hSelect, ints(id))
			// After the header (4), command (1), id (4), cursor flags
			// (1), iteration count (4) and NULL bitmap (1): the
			// new-params-bound flag.
			if bound := req[4+1+4+1+4+1]; (bound == 1) != (i == 0) {
				t.Fatalf("execute %d sends types: %v", i+1, bound == 1)
			}
			got, err := send(req)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("c-%d", id); id == 1000 && len(got) != 0 || id != 1000 && (len(got) != 1 || got[0] != want) {
				t.Fatalf("point select of id %d: %q", id, got)
			}
		}
		if got, err := run(hRange, ints(1, 3)...); err != nil || len(got) != 3 {
			t.Fatalf("range 1..3: %q, %v", got, err)
		}
		if got, err := run(hSum, ints(1, 3)...); err != nil || fmt.Sprint(got) != fmt.Sprint(wantSum) {
			t.Fatalf("SUM(k) of 1..3: %q, %v; want %q", got, err, wantSum)
		}
		if got, err := run(hSum, ints(100, 200)...); err != nil || len(got) != 1 || got[0] != "NULL" {
			t.Fatalf("SUM(k) of an empty range: %q, %v", got, err)
		}
		if got, err := run(hInts, ints(2)...); err != nil || len(got) != 1 || got[0] != "2|-3|-9|2" {
			t.Fatalf("integers of id 2: %q, %v", got, err)
		}
		c77 := target.SQLBytes([]byte("c-77"))
		if _, err := run(hInsert, target.SQLInt(77), target.SQLInt(1), c77, target.SQLBytes([]byte("p"))); err != nil {
			t.Fatal(err)
		}
		// A duplicate key is the statement's error, neither ignorable nor
		// a lost connection; the session goes on in step.
		_, err = run(hInsert, target.SQLInt(1), target.SQLInt(1), c77, target.SQLBytes([]byte("p")))
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 || errors.Is(err, target.ErrSQLRetry) || errors.Is(err, target.ErrSQLLost) {
			t.Fatalf("duplicate insert: %v", err)
		}
		if _, err := run(hDelete, ints(77)...); err != nil {
			t.Fatal(err)
		}
		if _, err := send(w.AppendTx(nil, target.SQLRollback)); err != nil {
			t.Fatal(err)
		}
		if got, err := run(hSelect, ints(77)...); err != nil || len(got) != 0 {
			t.Fatalf("id 77 after the rollback: %q, %v", got, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})

	// Session variables in the URI are the driver's to set: such a
	// session stays go-sql-driver's, and its rows come as the lean
	// client's do.
	t.Run("DriverWithParams", func(t *testing.T) {
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatal(err)
		}
		u.RawQuery = "sql_mode=%27STRICT_ALL_TABLES%27"
		s2, err := Open(target.Options{URI: u.String(), Durability: kv.Async})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		ss, err := s2.OpenSQLSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		if ss.(*session).lean != nil || ss.(*session).drv == nil {
			t.Fatal("a session with session variables is the lean client's")
		}
		prepare(t, ss)
		if err := ss.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		rows(t, ss)
		if n, err := ss.Run(ctx, hSetC, []target.SQLArg{target.SQLBytes([]byte("c-1")), target.SQLInt(1)}, nil); err != nil || n != 1 {
			t.Fatalf("update: %d %v", n, err)
		}
		if err := ss.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// A wrong password is the server's refusal, and its text carries no
	// password.
	t.Run("RefusedPassword", func(t *testing.T) {
		cfg := s.cfg.Clone()
		cfg.Passwd = "not-the-password-" + strings.Repeat("x", 8)
		_, err := dialLean(ctx, cfg)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Fatalf("wrong password: %v, want error 1045", err)
		}
		if strings.Contains(err.Error(), cfg.Passwd) {
			t.Fatal("the error shows the password")
		}
	})
}

// A server that asks for an authentication method the lean client does
// not speak (MySQL 8's caching_sha2_password) gets a clear refusal naming
// it, which OpenSQLSession takes as the cue to use go-sql-driver: a listener
// that answers like such a server.
func TestLeanUnsupportedAuthPlugin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		pkt := func(seq byte, p []byte) {
			c.Write(append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}, p...))
		}
		hs := []byte{10}
		hs = append(hs, "8.0.0-fake\x00"...)
		hs = append(hs, 7, 0, 0, 0)        // connection id
		hs = append(hs, "abcdefgh\x00"...) // scramble, part 1, and a filler
		caps := uint32(capLongPassword | capProtocol41 | capSecureConn | capPluginAuth | capConnectWithDB)
		hs = append(hs, byte(caps), byte(caps>>8), 45, 2, 0, byte(caps>>16), byte(caps>>24), 21)
		hs = append(hs, make([]byte, 10)...)
		hs = append(hs, "ijklmnopqrst\x00"...)
		hs = append(hs, "caching_sha2_password\x00"...)
		pkt(0, hs)
		var buf [4096]byte
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
		pkt(2, append([]byte("\xfecaching_sha2_password\x00"), "01234567890123456789\x00"...))
		c.Read(buf[:])
	}()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName, cfg.Timeout = "u", "secret-pw", "tcp", ln.Addr().String(), "db", time.Second
	_, err = dialLean(context.Background(), cfg)
	var ua *unsupportedAuth
	if !errors.As(err, &ua) || ua.plugin != "caching_sha2_password" || !strings.Contains(err.Error(), "caching_sha2_password") {
		t.Fatalf("dial: %v, want the plugin named", err)
	}
	if strings.Contains(err.Error(), cfg.Passwd) {
		t.Fatal("the error shows the password")
	}
}
