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
	"os/exec"
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

var packages = []string{"mariadb-server", "mariadb-client"}

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

// binary finds a program on PATH, or in /usr/sbin, which an ordinary
// user's PATH often lacks.
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

func (mariaServer) Check() error {
	for _, b := range []string{"mariadbd", "mariadb-install-db"} {
		if _, err := binary(b); err != nil {
			return proc.NotInstalled(b, "mariadb", packages...)
		}
	}
	if os.Geteuid() == 0 {
		if _, _, err := proc.LookupIDs(osUser); err != nil {
			return fmt.Errorf("mariadb: the %s user is missing (it comes with mariadb-server): %w", osUser, err)
		}
	}
	return nil
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

// runAs is the user the server runs as: mysql when we are root, else
// ourselves (mariadbd ignores user= unless it is root).
func runAs() string {
	if os.Geteuid() == 0 {
		return osUser
	}
	return ""
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
	mariadbd, _ := binary("mariadbd")
	installDB, _ := binary("mariadb-install-db")
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mariadb: creating %s: %w", dir, err)
	}
	user := runAs()
	if user != "" {
		if err := proc.CheckTraversable(dir, user); err != nil {
			return nil, fmt.Errorf("mariadb: %w", err)
		}
	}
	p := newPaths(dir)
	// The server (as mysql) creates its socket and pid file in run/ and
	// opens its error log itself: they must be its own.
	if err := os.MkdirAll(p.run, 0o755); err != nil {
		return nil, fmt.Errorf("mariadb: creating %s: %w", p.run, err)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mariadb: creating its log: %w", err)
	}
	f.Close()
	if user != "" {
		for _, path := range []string{p.run, p.log} {
			if err := proc.Chown(path, user); err != nil {
				return nil, fmt.Errorf("mariadb: %w", err)
			}
		}
	}
	out, err := proc.Output(ctx, mariadbd, "--version")
	if err != nil {
		return nil, fmt.Errorf("mariadb: version: %w", err)
	}
	version := parseVersion(out)

	port := cfg.Port
	if port == 0 {
		if port, err = proc.FreePort(); err != nil {
			return nil, fmt.Errorf("mariadb: %w", err)
		}
	}
	// mariadbd refuses to start when its socket path is too long (a deep
	// instance directory): then the socket goes to the temporary
	// directory, named by port so instances never collide.
	if !proc.SocketPathOK(p.socket) {
		p.socket = filepath.Join(os.TempDir(), fmt.Sprintf("storebench-mariadbd-%d.sock", port))
		proc.Logf(cfg.Log, "mariadb: %s is too deep for a Unix socket: using %s", p.run, p.socket)
	}
	bufferPool := int64(defaultBufferPool)
	if cfg.MemoryBytes > 0 {
		bufferPool = cfg.MemoryBytes
	}
	if err := os.WriteFile(p.cnf, []byte(optionFile(p, port, flush, flushMethod, bufferPool)), 0o644); err != nil {
		return nil, fmt.Errorf("mariadb: writing %s: %w", p.cnf, err)
	}
	password, err := cfg.Secret()
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if err := initDataDir(ctx, cfg.Log, installDB, p, user, version); err != nil {
		return nil, err
	}
	// Run at every start, before the server accepts connections (a
	// failure aborts start-up, with the reason in the log): once the TCP
	// probe logs in as storebench, the account and database exist. It
	// holds the password's hash, not the password; readable by the server
	// only, and removed once the server has read it.
	if err := writePrivate(p.init, initSQL(password), user); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	defer os.Remove(p.init)

	proc.Logf(cfg.Log, "mariadb: starting MariaDB %s on 127.0.0.1:%d (innodb_flush_log_at_trx_commit=%s, innodb_flush_method=%s) in %s", version, port, flush, flushMethod, dir)
	t0 := time.Now()
	// --defaults-file must come first. As root, started as mysql rather
	// than with user=mysql: a process that switches users itself loses its
	// parent-death signal and would outlive a killed storebench.
	h, err := proc.Start(ctx, proc.Spec{Name: "mariadbd", Path: mariadbd,
		Args: []string{"--defaults-file=" + p.cnf, "--init-file=" + p.init}, Dir: dir, LogPath: p.log, User: user, Detach: cfg.Detach})
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	dsn := (&mysql.Config{User: dbUser, Passwd: password, Net: "tcp", Addr: fmt.Sprintf("127.0.0.1:%d", port),
		DBName: dbName, Timeout: 2 * time.Second, AllowNativePasswords: true}).FormatDSN()
	probe := func(ctx context.Context) error {
		if err := proc.Listening(h.PID, port); err != nil {
			return err
		}
		return ping(ctx, dsn)
	}
	if err := proc.WaitReady(ctx, h, startTimeout, probe); err != nil {
		_ = proc.Stop(context.Background(), h, syscall.SIGTERM, 10*time.Second)
		return nil, err
	}
	// State the buffer pool the server really has (InnoDB rounds it).
	pool, err := variable(ctx, dsn, "innodb_buffer_pool_size")
	if err != nil {
		_ = proc.Stop(context.Background(), h, syscall.SIGTERM, 10*time.Second)
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	poolSetting := pool + " bytes"
	if n, err := strconv.ParseInt(pool, 10, 64); err == nil {
		poolSetting = fmt.Sprintf("%d MiB", n>>20)
	}
	if cfg.MemoryBytes > 0 {
		poolSetting += fmt.Sprintf(" (the target's cache, %d MiB asked)", cfg.MemoryBytes>>20)
	} else {
		poolSetting += " (MariaDB's default)"
	}
	proc.Logf(cfg.Log, "mariadb: ready in %s (pid %d)", time.Since(t0).Round(time.Millisecond), h.PID)
	return &server.Instance{
		Name:    s.Name(),
		URI:     fmt.Sprintf("mysql://%s:%s@127.0.0.1:%d/%s", dbUser, password, port, dbName),
		PID:     h.PID,
		DataDir: p.data,
		LogPath: p.log,
		Version: version,
		Settings: map[string]string{
			"version":                        version,
			"port":                           strconv.Itoa(port),
			"durability":                     string(orSync(cfg.Durability)),
			"durability_mapping":             mapping,
			server.FlushInterval:             logFlushWindow(flush),
			"innodb_flush_log_at_trx_commit": flush,
			"innodb_flush_method":            flushMethodSetting,
			"sync_binlog":                    "0 (binary log off)",
			"innodb_buffer_pool_size":        poolSetting,
			"socket":                         p.socket,
			"auth":                           "user storebench@127.0.0.1 with a random password generated at each start (in the URI only, never printed); root by unix_socket only",
		},
		StopFunc: func(ctx context.Context) error {
			return proc.Stop(ctx, h, syscall.SIGTERM, server.DefaultStopTimeout)
		},
	}, nil
}

func orSync(d kv.Durability) kv.Durability {
	if d == "" {
		return kv.Sync
	}
	return d
}

// initSQL creates the account and database, and (re)sets the password of
// a reused data directory, by its mysql_native_password hash.
func initSQL(password string) string {
	h := nativeHash(password)
	return `CREATE DATABASE IF NOT EXISTS ` + dbName + `;
CREATE USER IF NOT EXISTS '` + dbUser + `'@'127.0.0.1' IDENTIFIED BY PASSWORD '` + h + `';
ALTER USER '` + dbUser + `'@'127.0.0.1' IDENTIFIED BY PASSWORD '` + h + `';
GRANT ALL PRIVILEGES ON ` + dbName + `.* TO '` + dbUser + `'@'127.0.0.1';
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
func initDataDir(ctx context.Context, log io.Writer, installDB string, p paths, user, version string) error {
	if _, err := os.Stat(filepath.Join(p.data, "mysql")); err == nil {
		proc.Logf(log, "mariadb: reusing the data directory %s", p.data)
		return nil
	}
	if entries, err := os.ReadDir(p.data); err == nil {
		if len(entries) > 0 {
			return fmt.Errorf("mariadb: %s is neither empty nor a MariaDB data directory", p.data)
		}
		if err := os.Remove(p.data); err != nil {
			return fmt.Errorf("mariadb: %w", err)
		}
	}
	t0 := time.Now()
	cached, err := proc.Seed(ctx, proc.TemplateKey("mariadb", version, installArgs...), p.data, user, log, func(ctx context.Context) error {
		// --defaults-file must come first; --user makes it chown the
		// directory and run the bootstrap server as mysql.
		args := []string{"--defaults-file=" + p.cnf}
		if user != "" {
			args = append(args, "--user="+user)
		}
		args = append(args, installArgs...)
		proc.Logf(log, "mariadb: mariadb-install-db %s", p.data)
		if err := proc.Run(ctx, proc.Spec{Name: "mariadb-install-db", Path: installDB, Args: args, Dir: p.dir, LogPath: p.log}); err != nil {
			return fmt.Errorf("mariadb: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := proc.SyncFS(p.data); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	how := "mariadb-install-db"
	if cached {
		how = "copied from the cached mariadb-install-db result"
	}
	proc.Logf(log, "mariadb: data directory created in %s (%s)", time.Since(t0).Round(time.Millisecond), how)
	return nil
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
