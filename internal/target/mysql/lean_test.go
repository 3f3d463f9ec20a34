package mysql

import (
	"bytes"
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
	"storebench/internal/workload/oltp"
)

// leanTable is the sbtest table of these tests: one the oltp package's
// tests (which may share the server at the same time) do not use.
const leanTable = 9

// The oltp connections on plain TCP are the lean client's: rows parsed
// from the binary protocol reach the workload as the driver's did (c, an
// integer SUM, NULL for an empty range), writes report their affected
// rows, a killed session is a lost connection that Reconnect replaces,
// a deadlock is ignorable, and a URI with session variables keeps
// go-sql-driver.
func TestLeanOLTPConn(t *testing.T) {
	uri := servertest.URI(t, "mariadb")
	s, err := Open(target.Options{URI: uri, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	tbl := fmt.Sprintf("sbtest%d", leanTable)
	for _, q := range []string{"DROP TABLE IF EXISTS " + tbl,
		"CREATE TABLE " + tbl + "(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE = InnoDB"} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer s.db.Exec("DROP TABLE IF EXISTS " + tbl)
	rows := []oltp.Row{
		{ID: 1, K: 5, C: oltp.FillC(make([]byte, oltp.CLen), 1, leanTable, 1, 0), Pad: []byte("pad-1")},
		{ID: 2, K: -3, C: oltp.FillC(make([]byte, oltp.CLen), 1, leanTable, 2, 0), Pad: []byte("pad-2")},
		{ID: 3, K: 1 << 30, C: oltp.FillC(make([]byte, oltp.CLen), 1, leanTable, 3, 0), Pad: []byte("pad-3")},
	}
	if err := s.InsertRows(ctx, leanTable, rows); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) *oltpConn {
		t.Helper()
		oc, err := s.OpenConn(ctx, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		c := oc.(*oltpConn)
		t.Cleanup(func() { c.Close() })
		if c.lean == nil {
			t.Fatal("an oltp connection on TCP is not the lean client's")
		}
		if err := c.lean.prepare(leanTable); err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("Rows", func(t *testing.T) {
		c := open(t)
		// MariaDB leaves out the column definitions the prepare gave.
		if !c.lean.cacheMeta {
			t.Error("MARIADB_CLIENT_CACHE_METADATA not agreed with MariaDB")
		}
		var got [][]byte
		collect := func(v []byte, _ int64, _ bool) { got = append(got, bytes.Clone(v)) }
		if err := c.Select(ctx, oltp.PointSelect, leanTable, 2, 0, collect); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !bytes.Equal(got[0], rows[1].C) {
			t.Fatalf("point select of id 2: %q, want %q", got, rows[1].C)
		}
		// No row, then the next statement in step.
		got = nil
		if err := c.Select(ctx, oltp.PointSelect, leanTable, 1000, 0, collect); err != nil || len(got) != 0 {
			t.Fatalf("point select of a missing id: %q, %v", got, err)
		}
		if err := c.Select(ctx, oltp.PointSelect, leanTable, 3, 0, collect); err != nil || len(got) != 1 || !bytes.Equal(got[0], rows[2].C) {
			t.Fatalf("point select of id 3 after an empty result: %q, %v", got, err)
		}
		got = nil
		if err := c.Select(ctx, oltp.OrderRange, leanTable, 1, 3, collect); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("range 1..3: %d rows", len(got))
		}
		for i := 1; i < len(got); i++ {
			if bytes.Compare(got[i-1], got[i]) > 0 {
				t.Fatalf("ORDER BY c out of order: %q", got)
			}
		}
		sum := func(lo, hi int64) (int64, bool) {
			var n int64
			var null bool
			calls := 0
			if err := c.Select(ctx, oltp.SumRange, leanTable, lo, hi, func(_ []byte, s int64, isNull bool) { n, null = s, isNull; calls++ }); err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Fatalf("SUM gave %d rows", calls)
			}
			return n, null
		}
		if n, null := sum(1, 3); n != 5-3+1<<30 || null {
			t.Fatalf("SUM(k) of 1..3: %d (null %v)", n, null)
		}
		if _, null := sum(100, 200); !null {
			t.Fatal("SUM(k) of an empty range is not NULL")
		}
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		c99 := oltp.FillC(make([]byte, oltp.CLen), 2, leanTable, 99, 0)
		for _, w := range []struct {
			k    oltp.Kind
			a    oltp.Args
			want int64
		}{
			{oltp.Insert, oltp.Args{ID: 99, K: 7, C: c99, Pad: []byte("p")}, 1},
			{oltp.IndexUpdate, oltp.Args{ID: 99}, 1},
			// An update that changes nothing still counts its row
			// (CLIENT_FOUND_ROWS, as the driver's).
			{oltp.NonIndexUpdate, oltp.Args{ID: 99, C: c99}, 1},
			{oltp.NonIndexUpdate, oltp.Args{ID: 98, C: c99}, 0},
			{oltp.Delete, oltp.Args{ID: 99}, 1},
			{oltp.Delete, oltp.Args{ID: 99}, 0},
		} {
			if n, err := c.Exec(ctx, w.k, leanTable, &w.a); err != nil || n != w.want {
				t.Fatalf("%s: %d rows, %v; want %d", oltp.Statements[w.k], n, err, w.want)
			}
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// A duplicate key is an error of the server's, neither ignorable
		// nor a lost connection, and the connection goes on.
		_, err := c.Exec(ctx, oltp.Insert, leanTable, &oltp.Args{ID: 1, C: c99, Pad: []byte("p")})
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 || errors.Is(err, oltp.ErrIgnorable) || errors.Is(err, oltp.ErrLost) {
			t.Fatalf("duplicate insert: %v", err)
		}
		if n, err := c.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 3}); err != nil || n != 1 {
			t.Fatalf("update after an error: %d %v", n, err)
		}
		// A NULL c (the parameter's type NULL) is refused by the NOT NULL
		// column; the next update binds a string again.
		_, err = c.Exec(ctx, oltp.NonIndexUpdate, leanTable, &oltp.Args{ID: 3})
		if !errors.As(err, &me) || me.Number != 1048 {
			t.Fatalf("update to a NULL c: %v, want error 1048", err)
		}
		c3 := oltp.FillC(make([]byte, oltp.CLen), 3, leanTable, 3, 0)
		for i := 0; i < 2; i++ {
			if n, err := c.Exec(ctx, oltp.NonIndexUpdate, leanTable, &oltp.Args{ID: 3, C: c3}); err != nil || n != 1 {
				t.Fatalf("update after a NULL: %d %v", n, err)
			}
		}
		got = nil
		if err := c.Select(ctx, oltp.PointSelect, leanTable, 3, 0, collect); err != nil || len(got) != 1 || !bytes.Equal(got[0], c3) {
			t.Fatalf("c of id 3 after its update: %q, %v", got, err)
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
			_, lost = c.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 1})
			time.Sleep(20 * time.Millisecond)
		}
		if !errors.Is(lost, oltp.ErrLost) {
			t.Fatalf("a statement on the killed session: %v, want a lost connection", lost)
		}
		t.Logf("killed: %v", lost)
		if err := c.Reconnect(ctx); err != nil {
			t.Fatal(err)
		}
		if c.lean == nil {
			t.Fatal("the reconnected connection is not the lean client's")
		}
		if err := c.lean.prepare(leanTable); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 1}); err != nil || n != 1 {
			t.Fatalf("update after the reconnect: %d %v", n, err)
		}
	})

	t.Run("Deadlock", func(t *testing.T) {
		a, b := open(t), open(t)
		for _, c := range []*oltpConn{a, b} {
			if err := c.Begin(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 2}); err != nil {
			t.Fatal(err)
		}
		// a waits for b's row; b then asks for a's: InnoDB kills one.
		aerr := make(chan error, 1)
		go func() {
			_, err := a.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 2})
			aerr <- err
		}()
		time.Sleep(300 * time.Millisecond)
		_, berr := b.Exec(ctx, oltp.IndexUpdate, leanTable, &oltp.Args{ID: 1})
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
		if !errors.Is(errA, oltp.ErrIgnorable) || !errors.As(errA, &me) || me.Number != 1213 || errors.Is(errA, oltp.ErrLost) {
			t.Fatalf("deadlock: %v / %v, want one ignorable 1213", errA, berr)
		}
		t.Logf("deadlock: %v", errA)
		for _, c := range []*oltpConn{a, b} {
			if err := c.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})

	// Handed to an event loop, the connection's Wire writes each
	// statement and parses its reply from bytes as they come (here one
	// more byte at a time: nothing consumed until a packet is whole), as
	// the synchronous path does: rows, SUM and NULL, affected rows, the
	// server's errors classified, and the parameters' types sent on a
	// statement's first execute only.
	t.Run("Wire", func(t *testing.T) {
		c := open(t)
		if !c.Events() {
			t.Fatal("a lean connection cannot go to an event loop")
		}
		// The synchronous path's SUM (earlier subtests moved k).
		var wantSum int64
		if err := c.Select(ctx, oltp.SumRange, leanTable, 1, 3, func(_ []byte, s int64, _ bool) { wantSum = s }); err != nil || wantSum == 0 {
			t.Fatalf("SUM(k) of 1..3: %d, %v", wantSum, err)
		}
		fd, w, err := c.Detach()
		if err != nil {
			t.Fatal(err)
		}
		if c.Events() {
			t.Fatal("a detached connection says it can be detached again")
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			t.Fatal(err)
		}
		var in []byte
		buf := make([]byte, 64<<10)
		// run sends s and reads its reply; got is what the row callback
		// got.
		run := func(s oltp.Stmt) (got [][]byte, sum int64, null bool, stmtErr error) {
			t.Helper()
			req := w.Append(nil, &s)
			if _, err := unix.Write(fd, req); err != nil {
				t.Fatal(err)
			}
			row := func(v []byte, s int64, isNull bool) { got = append(got, bytes.Clone(v)); sum, null = s, isNull }
			for end := 0; ; {
				if end == len(in) {
					n, err := unix.Read(fd, buf)
					if err != nil || n == 0 {
						t.Fatalf("read: %d %v", n, err)
					}
					in = append(in, buf[:n]...)
				}
				end++
				n, done, serr, err := w.Reply(in[:end], &s, row)
				if err != nil {
					t.Fatalf("%s: %v", oltp.Statements[min(s.Kind, oltp.NumKinds-1)], err)
				}
				if n > 0 && (n < 4 || n > end) {
					t.Fatalf("consumed %d of %d bytes", n, end)
				}
				in, end = in[n:], end-n
				if done {
					if len(in) != 0 {
						t.Fatalf("%d bytes after a complete reply", len(in))
					}
					return got, sum, null, serr
				}
			}
		}
		if _, _, _, err := run(oltp.Stmt{Kind: oltp.TxBegin}); err != nil {
			t.Fatal(err)
		}
		st := &w.(*leanWire).l.stmts[leanTable-1][oltp.PointSelect]
		st.typed = false
		for i, id := range []int64{2, 1, 1000} { // (Rows rewrote id 3's c)
			req := w.Append(nil, &oltp.Stmt{Kind: oltp.PointSelect, Table: leanTable, Lo: id})
			// After the header (4), command (1), id (4), cursor flags
			// (1), iteration count (4) and NULL bitmap (1): the
			// new-params-bound flag.
			if bound := req[4+1+4+1+4+1]; (bound == 1) != (i == 0) {
				t.Fatalf("execute %d sends types: %v", i+1, bound == 1)
			}
			got, _, _, err := run(oltp.Stmt{Kind: oltp.PointSelect, Table: leanTable, Lo: id})
			if err != nil {
				t.Fatal(err)
			}
			if id == 1000 && len(got) != 0 || id != 1000 && (len(got) != 1 || !bytes.Equal(got[0], rows[id-1].C)) {
				t.Fatalf("point select of id %d: %q", id, got)
			}
		}
		if got, _, _, err := run(oltp.Stmt{Kind: oltp.OrderRange, Table: leanTable, Lo: 1, Hi: 3}); err != nil || len(got) != 3 {
			t.Fatalf("range 1..3: %d rows, %v", len(got), err)
		}
		if _, sum, null, err := run(oltp.Stmt{Kind: oltp.SumRange, Table: leanTable, Lo: 1, Hi: 3}); err != nil || sum != wantSum || null {
			t.Fatalf("SUM(k) of 1..3: %d (null %v), %v; want %d", sum, null, err, wantSum)
		}
		if _, _, null, err := run(oltp.Stmt{Kind: oltp.SumRange, Table: leanTable, Lo: 100, Hi: 200}); err != nil || !null {
			t.Fatalf("SUM(k) of an empty range: null %v, %v", null, err)
		}
		c77 := oltp.FillC(make([]byte, oltp.CLen), 2, leanTable, 77, 0)
		if _, _, _, err := run(oltp.Stmt{Kind: oltp.Insert, Table: leanTable, Args: oltp.Args{ID: 77, K: 1, C: c77, Pad: []byte("p")}}); err != nil {
			t.Fatal(err)
		}
		// A duplicate key is the statement's error, neither ignorable nor
		// a lost connection; the connection goes on in step.
		_, _, _, err = run(oltp.Stmt{Kind: oltp.Insert, Table: leanTable, Args: oltp.Args{ID: 1, C: c77, Pad: []byte("p")}})
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 || errors.Is(err, oltp.ErrIgnorable) || errors.Is(err, oltp.ErrLost) {
			t.Fatalf("duplicate insert: %v", err)
		}
		if _, _, _, err := run(oltp.Stmt{Kind: oltp.Delete, Table: leanTable, Args: oltp.Args{ID: 77}}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := run(oltp.Stmt{Kind: oltp.TxRollback}); err != nil {
			t.Fatal(err)
		}
		if got, _, _, err := run(oltp.Stmt{Kind: oltp.PointSelect, Table: leanTable, Lo: 77}); err != nil || len(got) != 0 {
			t.Fatalf("id 77 after the rollback: %q, %v", got, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})

	// Session variables in the URI are the driver's to set: such a
	// connection stays go-sql-driver's and works.
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
		oc, err := s2.OpenConn(ctx, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		defer oc.Close()
		if oc.(*oltpConn).lean != nil {
			t.Fatal("a connection with session variables is the lean client's")
		}
		if err := oc.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if err := oc.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// A wrong password is the server's refusal, and its text carries no
	// password.
	t.Run("RefusedPassword", func(t *testing.T) {
		cfg := s.cfg.Clone()
		cfg.Passwd = "not-the-password-" + strings.Repeat("x", 8)
		_, err := dialLean(ctx, cfg, 0)
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
// it, which OpenConn takes as the cue to use go-sql-driver: a listener
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
	_, err = dialLean(context.Background(), cfg, 0)
	var ua *unsupportedAuth
	if !errors.As(err, &ua) || ua.plugin != "caching_sha2_password" || !strings.Contains(err.Error(), "caching_sha2_password") {
		t.Fatalf("dial: %v, want the plugin named", err)
	}
	if strings.Contains(err.Error(), cfg.Passwd) {
		t.Fatal("the error shows the password")
	}
}
