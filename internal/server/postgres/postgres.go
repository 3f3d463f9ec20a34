// Package postgres runs PostgreSQL 15 (Debian's postgresql-15) for
// storebench: a cluster of its own under the instance directory, owned by
// and run as the postgres user when we are root (initdb and postgres
// refuse to run as root), listening on 127.0.0.1 only, with a database
// storebench. Over TCP the user storebench logs in with a password
// (scram-sha-256) generated at each start; only the Unix socket, which
// only the server's OS user (and root) may open, trusts its users, so
// that the password can be set without being written down.
package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

func init() { server.Register(pgServer{}) }

var packages = server.MustPackages("postgres") // its manifest.txt

// binDir is where Debian installs the PostgreSQL 15 programs (not on
// PATH: /usr/bin has only the version-switching wrappers).
const binDir = "/usr/lib/postgresql/15/bin"

// osUser owns the cluster and runs the server when we are root.
const osUser = "postgres"

// dbUser and dbName are what targets connect as and to.
const (
	dbUser = "storebench"
	dbName = "storebench"
)

// defaultSharedBuffers is PostgreSQL's own default, kept unless the study
// sets a memory budget.
const defaultSharedBuffers = 128 << 20

// startTimeout bounds start-up (~0.2 s from a fresh cluster; crash
// recovery of a large WAL would take longer).
const startTimeout = 60 * time.Second

type pgServer struct{}

func (pgServer) Name() string  { return "postgres" }
func (pgServer) Title() string { return "PostgreSQL" }

// StopSignal is SIGINT: PostgreSQL's fast shutdown (SIGTERM is smart
// shutdown, which waits for every client to disconnect).
func (pgServer) StopSignal() syscall.Signal { return syscall.SIGINT }

func (pgServer) Check() error {
	for _, b := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return proc.NotInstalled("PostgreSQL 15 ("+filepath.Join(binDir, b)+")", "postgres", packages...)
		}
	}
	return proc.CheckOSUser("postgres", osUser, "postgresql-15")
}

func (pgServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

// synchronousCommit maps the study's durability onto synchronous_commit
// (fsync stays on either way: off would risk corruption, not just loss),
// with the sentence Settings state it in.
func synchronousCommit(d kv.Durability) (value, mapping string, err error) {
	switch d {
	case kv.Sync, "":
		return "on", "sync: fsync=on, synchronous_commit=on (a commit returns once its WAL is flushed to disk)", nil
	case kv.Async:
		return "off", "async: fsync=on, synchronous_commit=off (a commit returns before its WAL is flushed; " +
			"a crash can lose the last commits, up to 3 x wal_writer_delay, without corruption)", nil
	}
	return "", "", fmt.Errorf("postgres: unknown durability %q (want sync or async)", d)
}

func (s pgServer) Start(ctx context.Context, cfg server.Config) (_ *server.Instance, err error) {
	syncCommit, mapping, err := synchronousCommit(cfg.Durability)
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
	st.syncCommit, st.mapping = syncCommit, mapping
	// A start that fails removes the data directory it made (initdb's
	// 32 MB, or what it wrote before a full disk stopped it), never one
	// it found and reused.
	if !st.cluster().Exists() {
		defer func() {
			if err != nil {
				if rerr := os.RemoveAll(st.data); rerr != nil {
					proc.Logf(cfg.Log, "postgres: removing the data directory of the failed start: %v", rerr)
				}
			}
		}()
	}
	if err := st.initCluster(ctx); err != nil {
		return nil, err
	}
	if err := st.settle(); err != nil {
		return nil, err
	}
	h, err := st.run(ctx)
	if err != nil {
		return nil, err
	}
	stop := st.stopFunc(h)
	if err := st.ready(ctx, h); err != nil {
		_ = stop(context.Background())
		return nil, err
	}
	proc.Logf(cfg.Log, "postgres: ready in %s (pid %d)", time.Since(st.t0).Round(time.Millisecond), h.PID)
	return st.instance(s.Name(), h, stop), nil
}

// start is one start of an instance: what prepare and settle find and
// lay out, then what Start runs.
type start struct {
	cfg                    server.Config
	dir, data, runDir, log string
	user, version          string
	env                    []string
	syncCommit, mapping    string
	port                   int
	password, socketDir    string
	sharedBuffers          int64
	t0                     time.Time // when postgres was started
}

// prepare lays out the instance directory (its run directory the
// server's own) and reads the version.
func prepare(ctx context.Context, cfg server.Config) (*start, error) {
	st := &start{cfg: cfg, user: proc.RunAs(osUser),
		// Messages in English whatever the caller's locale, and no
		// failure on a locale the machine lacks.
		env: []string{"LC_ALL=C"}}
	dir, err := proc.InstanceDir("postgres", cfg.Dir, st.user)
	if err != nil {
		return nil, err
	}
	st.dir, st.data, st.runDir, st.log = dir, filepath.Join(dir, "data"), filepath.Join(dir, "run"), filepath.Join(dir, "postgres.log")
	// Its socket and lock file go here, not to /var/run/postgresql, so
	// instances never collide.
	if err := proc.MkdirOwned(st.runDir, st.user); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	out, err := proc.Output(ctx, filepath.Join(binDir, "postgres"), "--version")
	if err != nil {
		return nil, fmt.Errorf("postgres: version: %w", err)
	}
	st.version = parseVersion(out)
	return st, nil
}

// settle picks the port, the password, shared_buffers and the socket's
// directory.
func (st *start) settle() error {
	var err error
	if st.port, err = st.cfg.ListenPort(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if st.password, err = st.cfg.Secret(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	st.sharedBuffers = int64(defaultSharedBuffers)
	if st.cfg.MemoryBytes > 0 {
		st.sharedBuffers = st.cfg.MemoryBytes
	}
	// The socket is how we log in to set the password. PostgreSQL
	// refuses to start when it cannot create it, and a deep instance
	// directory makes the path too long: then it goes to a private
	// directory of the temporary directory.
	st.socketDir = st.runDir
	if proc.SocketPathOK(filepath.Join(st.runDir, ".s.PGSQL."+strconv.Itoa(st.port))) {
		return nil
	}
	if st.socketDir, err = os.MkdirTemp("", "sbpg-"); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if st.user != "" {
		if err := proc.Chown(st.socketDir, st.user); err != nil {
			os.RemoveAll(st.socketDir)
			return fmt.Errorf("postgres: %w", err)
		}
	}
	proc.Logf(st.cfg.Log, "postgres: %s is too deep for a Unix socket: using %s", st.runDir, st.socketDir)
	return nil
}

// args is the server's command line: every setting that matters on it.
func (st *start) args() []string {
	return []string{"-D", st.data,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(st.port),
		"-c", "unix_socket_directories=" + socketDirsValue(st.socketDir),
		// Only the server's OS user (and root) may open the socket, on
		// which pg_hba.conf trusts: nobody else gets in without the
		// password.
		"-c", "unix_socket_permissions=0700",
		"-c", "password_encryption=scram-sha-256",
		"-c", "fsync=on",
		"-c", "synchronous_commit=" + st.syncCommit,
		"-c", fmt.Sprintf("shared_buffers=%dkB", st.sharedBuffers>>10),
		// Everything to stderr, which is the instance's log.
		"-c", "logging_collector=off",
	}
}

// run starts postgres (not yet ready).
func (st *start) run(ctx context.Context) (*proc.Handle, error) {
	proc.Logf(st.cfg.Log, "postgres: starting PostgreSQL %s on 127.0.0.1:%d (synchronous_commit=%s) in %s", st.version, st.port, st.syncCommit, st.dir)
	st.t0 = time.Now()
	h, err := proc.Start(ctx, proc.Spec{Name: "postgres", Path: filepath.Join(binDir, "postgres"), Args: st.args(),
		Dir: st.data, Env: st.env, LogPath: st.log, User: st.user, Detach: st.cfg.Detach})
	if err != nil {
		st.removeSocketDir()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return h, nil
}

// removeSocketDir removes the socket's private temporary directory, if
// it has one.
func (st *start) removeSocketDir() {
	if st.socketDir != st.runDir {
		os.RemoveAll(st.socketDir)
	}
}

// stopFunc stops the server h with a fast shutdown.
func (st *start) stopFunc(h *proc.Handle) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		err := proc.Stop(ctx, h, syscall.SIGINT, server.DefaultStopTimeout)
		st.removeSocketDir()
		return err
	}
}

// adminURI logs in over the socket, uri over TCP as targets will.
func (st *start) adminURI() string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=postgres sslmode=disable", connValue(st.socketDir), st.port, dbUser)
}

func (st *start) uri() string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", dbUser, st.password, st.port, dbName)
}

// ready waits until the server h answers over its socket, then sets up
// the user and database (setUp); the caller stops it if not.
func (st *start) ready(ctx context.Context, h *proc.Handle) error {
	adminURI := st.adminURI()
	if err := proc.WaitServing(ctx, h, st.port, startTimeout, func(ctx context.Context) error { return ping(ctx, adminURI) }); err != nil {
		return err
	}
	if err := setUp(ctx, adminURI, st.uri(), st.password); err != nil {
		return fmt.Errorf("postgres: %w; log:\n    %s", err, strings.ReplaceAll(proc.LogTail(st.log, proc.TailLines), "\n", "\n    "))
	}
	return nil
}

// instance describes the ready server h.
func (st *start) instance(name string, h *proc.Handle, stop func(ctx context.Context) error) *server.Instance {
	return &server.Instance{
		Name:    name,
		URI:     st.uri(),
		PID:     h.PID,
		DataDir: st.data,
		LogPath: st.log,
		Version: st.version,
		Settings: map[string]string{
			"version":            st.version,
			"port":               strconv.Itoa(st.port),
			"durability":         string(st.cfg.DurabilityOrSync()),
			"durability_mapping": st.mapping,
			server.FlushInterval: asyncWindow(st.syncCommit),
			"fsync":              "on",
			"synchronous_commit": st.syncCommit,
			"shared_buffers":     sharedBuffersSetting(st.sharedBuffers, st.cfg.MemoryBytes > 0),
			"auth": "scram-sha-256 over TCP (127.0.0.1) with a random password generated at each start (in the URI only, never printed); " +
				"trust on the Unix socket, which only the server's OS user may open",
		},
		StopFunc: stop,
	}
}

// initArgs shape a fresh cluster. --no-sync: one syncfs afterwards
// flushes it all at a fraction of the cost of initdb's fsync of each
// file.
var initArgs = []string{"-U", dbUser, "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-instructions", "--no-sync"}

// cluster is the instance's data directory, made by initdb.
func (st *start) cluster() proc.DataDir {
	return proc.DataDir{Server: "postgres", Path: st.data, Marker: "PG_VERSION", Kind: "a PostgreSQL data directory",
		Reused: "the cluster in", Made: "cluster", Tool: "initdb",
		Key: proc.TemplateKey("postgres", st.version, initArgs...), Owner: st.user, Log: st.cfg.Log}
}

// initCluster creates the cluster unless one is there: initdb once per
// version and options, then copies of it (see proc.Seed).
func (st *start) initCluster(ctx context.Context) error {
	dataDir, user, log := st.data, st.user, st.cfg.Log
	return st.cluster().Init(ctx, func(ctx context.Context) error {
		// initdb as postgres cannot create a directory in ours (root's):
		// make it, give it away.
		if err := os.Mkdir(dataDir, 0o700); err != nil {
			return fmt.Errorf("postgres: creating %s: %w", dataDir, err)
		}
		if user != "" {
			if err := proc.Chown(dataDir, user); err != nil {
				return fmt.Errorf("postgres: %w", err)
			}
		}
		proc.Logf(log, "postgres: initdb %s", dataDir)
		err := proc.Run(ctx, proc.Spec{Name: "initdb", Path: filepath.Join(binDir, "initdb"),
			Args: append([]string{"-D", dataDir}, initArgs...), Dir: dataDir, Env: st.env, LogPath: st.log, User: user})
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		return nil
	})
}

// ping connects and runs SELECT 1. Authentication and missing-database
// failures are permanent: waiting will not fix them.
func ping(ctx context.Context, uri string) error {
	conn, err := pgx.Connect(ctx, uri)
	if err != nil {
		return classify(err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return classify(err)
	}
	return nil
}

func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// 28: invalid authorization; 3D000: no such database.
		if strings.HasPrefix(pgErr.Code, "28") || pgErr.Code == "3D000" {
			return proc.Permanent(err)
		}
	}
	return err
}

// setUp gives the user storebench its password and creates the
// storebench database unless it exists (a reused cluster), over the
// socket (adminURI), then logs in over TCP as targets will (uri).
func setUp(ctx context.Context, adminURI, uri, password string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURI)
	if err != nil {
		return fmt.Errorf("connecting over the socket to set up: %w", err)
	}
	defer conn.Close(context.Background())
	verifier, err := scramVerifier(password)
	if err != nil {
		return err
	}
	// The verifier, not the password: a statement can end up in the
	// server's log, and the verifier does not let anyone log in.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+pgx.Identifier{dbUser}.Sanitize()+" PASSWORD '"+verifier+"'"); err != nil {
		return fmt.Errorf("setting the password of %s: %w", dbUser, err)
	}
	if err := createDatabase(ctx, conn); err != nil {
		return err
	}
	if err := ping(ctx, uri); err != nil {
		return fmt.Errorf("logging in over TCP with the password: %s", redact.Scrub(uri, err.Error()))
	}
	return nil
}

// scramVerifier is what PostgreSQL stores for a scram-sha-256 password
// (RFC 5802/7677, in PostgreSQL's text form), computed here as psql's
// \password does so that the password itself never reaches the server.
func scramVerifier(password string) (string, error) {
	const iterations = 4096 // PostgreSQL's scram_iterations default
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generating a salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	mac := func(msg string) []byte {
		m := hmac.New(sha256.New, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	stored := sha256.Sum256(mac("Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac("Server Key"))), nil
}

// sharedBuffersSetting states shared_buffers and where it comes from.
func sharedBuffersSetting(n int64, fromCache bool) string {
	s := fmt.Sprintf("%d MiB", n>>20)
	if fromCache {
		return s + " (the target's cache)"
	}
	return s + " (PostgreSQL's default)"
}

// createDatabase creates the storebench database unless it exists (a
// reused cluster).
func createDatabase(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName).Scan(&exists); err != nil {
		return fmt.Errorf("looking for database %s: %w", dbName, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbName}.Sanitize()); err != nil {
		return fmt.Errorf("creating database %s: %w", dbName, err)
	}
	return nil
}

// parseVersion finds 15.18 in "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
func parseVersion(out string) string {
	f := strings.Fields(proc.FirstLine(out))
	for i, w := range f {
		if w == "(PostgreSQL)" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return proc.FirstLine(out)
}

// asyncWindow is what synchronous_commit=off promises to lose at most: 3
// x wal_writer_delay (its default, 200 ms) ("": on, nothing on a timer).
func asyncWindow(syncCommit string) string {
	if syncCommit == "off" {
		return "600ms"
	}
	return ""
}

// connValue quotes v for a libpq keyword/value connection string: in
// single quotes, a quote or backslash escaped with a backslash. A socket
// directory with a space (or a quote) in it is one value, not the start
// of the next keyword.
func connValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// socketDirsValue is the value of unix_socket_directories naming the one
// directory dir: a comma-separated list whose items may be double-quoted
// (a doubled quote inside), so that a comma or leading space in dir
// cannot split or shorten it.
func socketDirsValue(dir string) string {
	return `"` + strings.ReplaceAll(dir, `"`, `""`) + `"`
}
