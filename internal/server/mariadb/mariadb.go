// Package mariadb runs MariaDB (Debian's mariadb-server, 10.11) for
// storebench: a data directory of its own made by mariadb-install-db, an
// option file of its own (nothing from /etc/mysql), run as the mysql user
// when we are root, listening on 127.0.0.1 and on a socket in the
// instance directory. root can log in only over that socket (unix_socket
// authentication), so a TCP user storebench is created at start-up, with
// a random password generated at each start.
package mariadb

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

func init() { server.Register(mariaServer{}) }

var packages = server.MustPackages("mariadb") // its manifest.txt

// osUser owns the data directory and runs the server when we are root.
const osUser = "mysql"

// The account and database targets use; the account's password is
// generated at each start (proc.Password).
const (
	dbUser = "storebench"
	dbName = "storebench"
)

// defaultBufferPool is MariaDB's own default, kept unless the study sets
// a memory budget.
const defaultBufferPool = 128 << 20

// startTimeout bounds start-up (~0.2 s on a fresh data directory; InnoDB
// crash recovery takes longer).
const startTimeout = 120 * time.Second

type mariaServer struct{}

func (mariaServer) Name() string               { return "mariadb" }
func (mariaServer) Title() string              { return "MariaDB" }
func (mariaServer) StopSignal() syscall.Signal { return syscall.SIGTERM }

func (mariaServer) Check() error {
	for _, b := range []string{"mariadbd", "mariadb-install-db"} {
		if _, err := proc.Sbin(b); err != nil {
			return proc.NotInstalled(b, "mariadb", packages...)
		}
	}
	return proc.CheckOSUser("mariadb", osUser, "mariadb-server")
}

func (mariaServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

// flushAtCommit maps the study's durability onto
// innodb_flush_log_at_trx_commit, with the sentence Settings state it in.
// The binary log is off, so sync_binlog has nothing to sync.
func flushAtCommit(d kv.Durability) (value, mapping string, err error) {
	switch d {
	case kv.Sync, "":
		return "1", "sync: innodb_flush_log_at_trx_commit=1 (the redo log is flushed to disk at each commit); binary log off, sync_binlog=0", nil
	case kv.Async:
		return "2", "async: innodb_flush_log_at_trx_commit=2 (the redo log is written at commit and flushed about once a second; " +
			"an OS crash can lose the last second of commits); binary log off, sync_binlog=0", nil
	}
	return "", "", fmt.Errorf("mariadb: unknown durability %q (want sync or async)", d)
}

// paths of one instance.
type paths struct {
	dir, data, run, socket, pid, log, cnf, init string
}

func newPaths(dir string) paths {
	run := filepath.Join(dir, "run")
	return paths{
		dir: dir, data: filepath.Join(dir, "data"), run: run,
		socket: filepath.Join(run, "mariadbd.sock"), pid: filepath.Join(run, "mariadbd.pid"),
		log: filepath.Join(dir, "mariadb.log"), cnf: filepath.Join(dir, "my.cnf"), init: filepath.Join(dir, "init.sql"),
	}
}

func (s mariaServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	flush, mapping, err := flushAtCommit(cfg.Durability)
	if err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	st, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	st.flush, st.mapping = flush, mapping
	if err := os.WriteFile(st.p.cnf, []byte(optionFile(st.p, st.port, flush, flushMethod, st.bufferPool())), 0o644); err != nil {
		return nil, fmt.Errorf("mariadb: writing %s: %w", st.p.cnf, err)
	}
	if st.password, err = cfg.Secret(); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if err := st.initDataDir(ctx); err != nil {
		return nil, err
	}
	h, err := st.run(ctx)
	if err != nil {
		return nil, err
	}
	pool, err := st.poolSetting(ctx)
	if err != nil {
		proc.Abandon(h, syscall.SIGTERM, 10*time.Second)
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	proc.Logf(cfg.Log, "mariadb: ready in %s (pid %d)", time.Since(st.t0).Round(time.Millisecond), h.PID)
	return st.instance(s.Name(), h, pool), nil
}

// start is one start of an instance: what prepare finds and lays out,
// then what Start runs.
type start struct {
	cfg                                server.Config
	p                                  paths
	mariadbd, installDB, user, version string
	port                               int
	flush, mapping, password           string
	t0                                 time.Time // when mariadbd was started
}

// prepare lays out the instance directory (its run directory and log
// the server's own), reads the version and picks the port and socket.
func prepare(ctx context.Context, cfg server.Config) (*start, error) {
	st := &start{cfg: cfg, user: proc.RunAs(osUser)}
	st.mariadbd, _ = proc.Sbin("mariadbd")
	st.installDB, _ = proc.Sbin("mariadb-install-db")
	dir, err := proc.InstanceDir("mariadb", cfg.Dir, st.user)
	if err != nil {
		return nil, err
	}
	st.p = newPaths(dir)
	// The server (as mysql) creates its socket and pid file in run/ and
	// opens its error log itself: they must be its own.
	if err := proc.MkdirOwned(st.p.run, st.user); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if err := createLog(st.p.log, st.user); err != nil {
		return nil, err
	}
	out, err := proc.Output(ctx, st.mariadbd, "--version")
	if err != nil {
		return nil, fmt.Errorf("mariadb: version: %w", err)
	}
	st.version = parseVersion(out)
	if st.port, err = cfg.ListenPort(); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	// mariadbd refuses to start when its socket path is too long (a deep
	// instance directory): then the socket goes to the temporary
	// directory, named by port so instances never collide.
	if !proc.SocketPathOK(st.p.socket) {
		st.p.socket = filepath.Join(os.TempDir(), fmt.Sprintf("storebench-mariadbd-%d.sock", st.port))
		proc.Logf(cfg.Log, "mariadb: %s is too deep for a Unix socket: using %s", st.p.run, st.p.socket)
	}
	return st, nil
}

// createLog creates the server's error log, owned by user when set.
func createLog(path, user string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mariadb: creating its log: %w", err)
	}
	f.Close()
	if user != "" {
		if err := proc.Chown(path, user); err != nil {
			return fmt.Errorf("mariadb: %w", err)
		}
	}
	return nil
}

// bufferPool is innodb_buffer_pool_size: the target's cache, else
// MariaDB's default.
func (st *start) bufferPool() int64 {
	if st.cfg.MemoryBytes > 0 {
		return st.cfg.MemoryBytes
	}
	return defaultBufferPool
}

// dsn logs in over TCP as storebench.
func (st *start) dsn() string {
	return (&mysql.Config{User: dbUser, Passwd: st.password, Net: "tcp", Addr: fmt.Sprintf("127.0.0.1:%d", st.port),
		DBName: dbName, Timeout: 2 * time.Second, AllowNativePasswords: true}).FormatDSN()
}

// run writes the init file, starts mariadbd and waits until storebench
// logs in over TCP, stopping the server if it does not.
func (st *start) run(ctx context.Context) (*proc.Handle, error) {
	// Run at every start, before the server accepts connections (a
	// failure aborts start-up, with the reason in the log): once the TCP
	// probe logs in as storebench, the account and database exist. It
	// holds the password's hash, not the password; readable by the server
	// only, and removed once the server has read it.
	if err := writePrivate(st.p.init, initSQL(st.password), st.user); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	defer os.Remove(st.p.init)

	proc.Logf(st.cfg.Log, "mariadb: starting MariaDB %s on 127.0.0.1:%d (innodb_flush_log_at_trx_commit=%s, innodb_flush_method=%s) in %s", st.version, st.port, st.flush, flushMethod, st.p.dir)
	st.t0 = time.Now()
	// --defaults-file must come first. As root, started as mysql rather
	// than with user=mysql: a process that switches users itself loses its
	// parent-death signal and would outlive a killed storebench.
	h, err := proc.Start(ctx, proc.Spec{Name: "mariadbd", Path: st.mariadbd,
		Args: []string{"--defaults-file=" + st.p.cnf, "--init-file=" + st.p.init}, Dir: st.p.dir, LogPath: st.p.log, User: st.user, Detach: st.cfg.Detach})
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	dsn := st.dsn()
	if err := proc.WaitServing(ctx, h, st.port, startTimeout, func(ctx context.Context) error { return ping(ctx, dsn) }); err != nil {
		proc.Abandon(h, syscall.SIGTERM, 10*time.Second)
		return nil, err
	}
	return h, nil
}

// poolSetting states the buffer pool the server really has (InnoDB
// rounds it) and where its size comes from.
func (st *start) poolSetting(ctx context.Context) (string, error) {
	pool, err := variable(ctx, st.dsn(), "innodb_buffer_pool_size")
	if err != nil {
		return "", err
	}
	setting := pool + " bytes"
	if n, err := strconv.ParseInt(pool, 10, 64); err == nil {
		setting = fmt.Sprintf("%d MiB", n>>20)
	}
	if st.cfg.MemoryBytes > 0 {
		return setting + fmt.Sprintf(" (the target's cache, %d MiB asked)", st.cfg.MemoryBytes>>20), nil
	}
	return setting + " (MariaDB's default)", nil
}

// instance describes the ready server h.
func (st *start) instance(name string, h *proc.Handle, pool string) *server.Instance {
	return &server.Instance{
		Name:    name,
		URI:     fmt.Sprintf("mysql://%s:%s@127.0.0.1:%d/%s", dbUser, st.password, st.port, dbName),
		PID:     h.PID,
		DataDir: st.p.data,
		LogPath: st.p.log,
		Version: st.version,
		Settings: map[string]string{
			"version":                        st.version,
			"port":                           strconv.Itoa(st.port),
			"durability":                     string(st.cfg.DurabilityOrSync()),
			"durability_mapping":             st.mapping,
			server.FlushInterval:             logFlushWindow(st.flush),
			"innodb_flush_log_at_trx_commit": st.flush,
			"innodb_flush_method":            flushMethodSetting,
			"sync_binlog":                    "0 (binary log off)",
			"innodb_buffer_pool_size":        pool,
			"socket":                         st.p.socket,
			"auth":                           "user storebench@127.0.0.1 with a random password generated at each start (in the URI only, never printed); root by unix_socket only",
		},
		StopFunc: server.StopFunc(h, syscall.SIGTERM),
	}
}

// initSQL creates the account and database, and (re)sets the password of
// a reused data directory, by its mysql_native_password hash. The account
// may also create, use and drop the databases storebench_* (the pattern's
// \_ a literal underscore): a workload's test runs in one of its own there
// (testdb= in manifest.txt), so that other packages' tests, which empty
// the tables of storebench, leave its tables alone. Nothing else of the
// server is the account's.
func initSQL(password string) string {
	h := nativeHash(password)
	return `CREATE DATABASE IF NOT EXISTS ` + dbName + `;
CREATE USER IF NOT EXISTS '` + dbUser + `'@'127.0.0.1' IDENTIFIED BY PASSWORD '` + h + `';
ALTER USER '` + dbUser + `'@'127.0.0.1' IDENTIFIED BY PASSWORD '` + h + `';
GRANT ALL PRIVILEGES ON ` + dbName + `.* TO '` + dbUser + `'@'127.0.0.1';
GRANT ALL PRIVILEGES ON ` + "`" + dbName + `\_%` + "`" + `.* TO '` + dbUser + `'@'127.0.0.1';
`
}

// nativeHash is the mysql_native_password hash: "*" and the upper-case hex
// of SHA1(SHA1(password)), what the server stores.
func nativeHash(password string) string {
	a := sha1.Sum([]byte(password))
	b := sha1.Sum(a[:])
	return "*" + strings.ToUpper(hex.EncodeToString(b[:]))
}

// writePrivate writes a file only its owner reads (mode 0600), owned by
// user when not empty.
func writePrivate(path, content, user string) error {
	_ = os.Remove(path) // WriteFile keeps the mode of an existing file
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if user != "" {
		return proc.Chown(path, user)
	}
	return nil
}

// variable reads one server variable over TCP.
func variable(ctx context.Context, dsn, name string) (string, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT @@"+name).Scan(&v); err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	return v, nil
}

// flushMethod is innodb_flush_method, MariaDB 10.11's default, with the
// sentence Settings state it in. It holds on the power-loss file system
// too (package powerfs), which opens its backing files without O_DIRECT
// and keeps an O_DIRECT write, like any other, until it is synced.
const flushMethod, flushMethodSetting = "O_DIRECT", "O_DIRECT (MariaDB's default)"

// optionFile is the whole option file: with --defaults-file, nothing is
// read from /etc/mysql or ~/.my.cnf. No user=: the server is started as
// its user (see Start).
func optionFile(p paths, port int, flush, method string, bufferPool int64) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by storebench: each start rewrites it.")
	w("[client]")
	w("port=%d", port)
	w("socket=%s", optValue(p.socket))
	w("")
	w("[mysqld]")
	w("datadir=%s", optValue(p.data))
	w("port=%d", port)
	w("bind-address=127.0.0.1")
	w("socket=%s", optValue(p.socket))
	w("pid-file=%s", optValue(p.pid))
	w("log-error=%s", optValue(p.log))
	// Accounts by address: 127.0.0.1 must not become "localhost".
	w("skip-name-resolve")
	w("skip-log-bin")
	w("sync_binlog=0")
	w("innodb_flush_log_at_trx_commit=%s", flush)
	w("innodb_flush_method=%s", method)
	w("innodb_buffer_pool_size=%d", bufferPool)
	return b.String()
}

// installArgs shape a fresh data directory (with the defaults the option
// file leaves alone: page size, redo log size).
var installArgs = []string{"--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve"}

// initDataDir creates the data directory unless one is there:
// mariadb-install-db once per version, then copies (see proc.Seed; its
// ~1000 fsyncs take seconds, the copy a fraction of that).
func (st *start) initDataDir(ctx context.Context) error {
	p, user, log := st.p, st.user, st.cfg.Log
	d := proc.DataDir{Server: "mariadb", Path: p.data, Marker: "mysql", Kind: "a MariaDB data directory",
		Reused: "the data directory", Made: "data directory", Tool: "mariadb-install-db",
		Key: proc.TemplateKey("mariadb", st.version, installArgs...), Owner: user, Log: log}
	return d.Init(ctx, func(ctx context.Context) error {
		// --defaults-file must come first; --user makes it chown the
		// directory and run the bootstrap server as mysql.
		args := []string{"--defaults-file=" + p.cnf}
		if user != "" {
			args = append(args, "--user="+user)
		}
		args = append(args, installArgs...)
		proc.Logf(log, "mariadb: mariadb-install-db %s", p.data)
		if err := proc.Run(ctx, proc.Spec{Name: "mariadb-install-db", Path: st.installDB, Args: args, Dir: p.dir, LogPath: p.log}); err != nil {
			return fmt.Errorf("mariadb: %w", err)
		}
		return nil
	})
}

// ping logs in over TCP as storebench. Access denied and unknown
// database are permanent: the init file runs before the server accepts
// connections, so they cannot be a race.
func ping(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return proc.Permanent(err)
	}
	defer db.Close()
	err = db.PingContext(ctx)
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && (myErr.Number == 1045 || myErr.Number == 1049) {
		return proc.Permanent(err)
	}
	return err
}

// parseVersion finds 10.11.19 in
// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu ...".
func parseVersion(out string) string {
	f := strings.Fields(proc.FirstLine(out))
	for i, w := range f {
		if w == "Ver" && i+1 < len(f) {
			v, _, _ := strings.Cut(f[i+1], "-")
			return v
		}
	}
	return proc.FirstLine(out)
}

// logFlushWindow is what innodb_flush_log_at_trx_commit=2 promises to
// lose at most: the log is fsynced once per innodb_flush_log_at_timeout
// (its default, 1 s) ("": every commit fsynced).
func logFlushWindow(flush string) string {
	if flush == "2" {
		return "1s"
	}
	return ""
}

// optValue quotes a path for the option file: in double quotes (a '#' in
// it is not a comment, a space not its end), a backslash doubled (the
// file's escape character).
func optValue(v string) string {
	return `"` + strings.ReplaceAll(v, `\`, `\\`) + `"`
}
