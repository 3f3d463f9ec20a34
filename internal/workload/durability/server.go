package durability

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"storebench/internal/kv"
	"storebench/internal/measure/procstat"
	"storebench/internal/server"
	"storebench/internal/server/proc"
	"storebench/internal/target"
	"storebench/internal/workload"
)

// Servers whose crash the workload can take: the server's own process
// is killed, its data directory on the LazyFS mount. Each needs a client
// that writes single records and atomic batches.
var serverClients = map[string]func(uri string) (serverClient, error){
	"redis":    newRedisClient,
	"postgres": newPGClient,
	"mariadb":  newMySQLClient,
}

// noPowerLoss are the servers whose power failure under LazyFS is
// refused, and why: a result that would blame the server for what may
// be LazyFS's limit is not reported.
var noPowerLoss = map[string]string{
	"mariadb": "after a LazyFS cache clear InnoDB does not restart (\"Plugin initialization aborted with error I/O error\" reading its redo log); " +
		"not yet told apart from a LazyFS limit (O_DIRECT or O_DSYNC writes on FUSE), so no verdict is given: kill-9 only",
}

// serverClient is one connection to a server.
type serverClient interface {
	writerConn
	get(ctx context.Context, key []byte) ([]byte, error)
	Close() error
}

// CanCrash says whether the workload can crash target name ("": it
// can; else why not).
func CanCrash(info target.Info) string {
	if info.Embedded() {
		return ""
	}
	if _, ok := serverClients[info.Server]; ok {
		return ""
	}
	return fmt.Sprintf("%s: crashing its server is not supported yet (embedded engines, Redis, PostgreSQL and MariaDB are)", info.Name)
}

// srvEngine is a managed server this workload started on the trial's
// data directory, with a client per writer.
type srvEngine struct {
	inst    *server.Instance
	writers []serverClient
	ctl     serverClient
	done    chan struct{}
	stopped chan struct{}
}

// startServer starts the target's server in dir. With lazyData set (a
// power-loss trial), the server's data directory lives there, on the
// LazyFS mount, and dir stays on the plain disk (its sockets: LazyFS has
// none): the first start prepares the data directory in dir, stops
// cleanly, moves it to lazyData (fsynced) and leaves a symbolic link in
// its place; each start then runs on it.
func startServer(ctx context.Context, opened *workload.OpenSpec, dir, lazyData string, class kv.Durability, writers int, logPath string) (crashable, error) {
	info, err := target.Lookup(opened.Target)
	if err != nil {
		return nil, err
	}
	newClient, ok := serverClients[info.Server]
	if !ok {
		return nil, errors.New(CanCrash(info))
	}
	srv, err := server.Lookup(info.Server)
	if err != nil {
		return nil, err
	}
	if why, ok := noPowerLoss[info.Server]; ok && lazyData != "" {
		return nil, fmt.Errorf("%s: power-loss: %s", info.Server, why)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cfg := server.Config{Dir: dir, Durability: class, Log: logf}
	if lazyData != "" {
		if _, err := os.Stat(lazyData); errors.Is(err, os.ErrNotExist) {
			if err := moveData(ctx, srv, cfg, lazyData); err != nil {
				return nil, err
			}
		}
	}
	inst, err := srv.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e := &srvEngine{inst: inst, done: make(chan struct{}), stopped: make(chan struct{})}
	fail := func(err error) (crashable, error) {
		e.closeClients()
		_ = inst.Stop(context.Background())
		return nil, err
	}
	for w := 0; w < writers; w++ {
		c, err := newClient(inst.URI)
		if err != nil {
			return fail(err)
		}
		e.writers = append(e.writers, c)
	}
	if e.ctl, err = newClient(inst.URI); err != nil {
		return fail(err)
	}
	// exited: the server's process is gone (polled: it is the server
	// package's child, reaped there).
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for proc.Alive(inst.PID) {
			select {
			case <-e.stopped:
				return
			case <-t.C:
			}
		}
		close(e.done)
	}()
	return e, nil
}

func (e *srvEngine) writer(w int) writerConn { return e.writers[w] }

func (e *srvEngine) get(ctx context.Context, key []byte) ([]byte, error) {
	return e.ctl.get(ctx, key)
}

func (e *srvEngine) exited() <-chan struct{} { return e.done }

func (e *srvEngine) kill() {
	// The server and every process below it (PostgreSQL's backends
	// leave its process group: setsid), as a power failure takes them:
	// all stopped first, so that none acts on another's death, then
	// killed; the next start must not find one still holding the data
	// (PostgreSQL: "pre-existing shared memory block is still in use").
	pids := append([]int{e.inst.PID}, descendants(e.inst.PID)...)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	select {
	case <-e.done:
	case <-time.After(time.Until(deadline)):
	}
}

// descendants are the processes below pid.
func descendants(pid int) []int {
	out, _ := procstat.Descendants(pid)
	return out
}

// running says whether pid exists and is not a zombie (a zombie holds
// no file and no shared memory).
func running(pid int) bool {
	st, err := procstat.StatOf(pid)
	return err == nil && st.State != "Z" && st.State != "X"
}

// release closes the clients (not safe under a writer still using one:
// pgx panics) and what the server package holds for the dead process.
func (e *srvEngine) release() {
	e.closeClients()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.inst.Stop(ctx)
}

func (e *srvEngine) close(ctx context.Context) error {
	e.closeClients()
	err := e.inst.Stop(ctx)
	select {
	case <-e.stopped:
	default:
		close(e.stopped)
	}
	return err
}

func (e *srvEngine) closeClients() {
	for _, c := range append(e.writers, e.ctl) {
		if c != nil {
			_ = c.Close()
		}
	}
}

// redisClient writes a record with SET and a batch with MULTI/EXEC.
type redisClient struct{ c *redis.Client }

func newRedisClient(uri string) (serverClient, error) {
	o, err := redis.ParseURL(uri)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	o.PoolSize, o.MaxRetries = 1, -1
	return &redisClient{redis.NewClient(o)}, nil
}

func (r *redisClient) write(kvs [][]byte) error {
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

func (r *redisClient) get(ctx context.Context, key []byte) ([]byte, error) {
	v, err := r.c.Get(ctx, string(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, kv.ErrNotFound
	}
	return v, err
}

func (r *redisClient) Close() error { return r.c.Close() }

// pgClient writes a record with an upsert and a batch with one
// multi-row upsert (one statement: atomic) into table durability.
type pgClient struct{ c *pgx.Conn }

const pgTable = `CREATE TABLE IF NOT EXISTS durability (k bytea PRIMARY KEY, v bytea NOT NULL)`

func newPGClient(uri string) (serverClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if _, err := c.Exec(ctx, pgTable); err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &pgClient{c}, nil
}

func (p *pgClient) write(kvs [][]byte) error {
	q := "INSERT INTO durability (k, v) VALUES "
	args := make([]any, 0, len(kvs))
	for i := 0; i < len(kvs); i += 2 {
		if i > 0 {
			q += ", "
		}
		q += fmt.Sprintf("($%d, $%d)", i+1, i+2)
		args = append(args, kvs[i], kvs[i+1])
	}
	q += " ON CONFLICT (k) DO UPDATE SET v = excluded.v"
	_, err := p.c.Exec(context.Background(), q, args...)
	return err
}

func (p *pgClient) get(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := p.c.QueryRow(ctx, "SELECT v FROM durability WHERE k = $1", key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	return v, err
}

func (p *pgClient) Close() error { return p.c.Close(context.Background()) }

// moveData starts the server once to make its data directory, stops it
// cleanly, and moves that directory to dst (owner and modes kept, every
// file fsynced), leaving a symbolic link to dst in its place.
func moveData(ctx context.Context, srv server.Server, cfg server.Config, dst string) error {
	inst, err := srv.Start(ctx, cfg)
	if err != nil {
		return err
	}
	src := inst.DataDir
	if err := inst.Stop(ctx); err != nil {
		return err
	}
	// One file at a time (LazyFS, a research prototype, has aborted its
	// connection under parallel copies), owner and mode kept
	// (PostgreSQL's files belong to postgres).
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			if err := os.Mkdir(to, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(l, to); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(p, to, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil // sockets, FIFOs: not data
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if err := os.Lchown(to, int(st.Uid), int(st.Gid)); err != nil {
				return err
			}
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return os.Chmod(to, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("moving the server's data: %w", err)
	}
	if err := syncTree(dst); err != nil {
		return err
	}
	if err := syncTree(filepath.Dir(dst)); err != nil {
		return err
	}
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	return os.Symlink(dst, src)
}

// mysqlClient is pgClient's MariaDB twin (InnoDB table, one connection).
type mysqlClient struct{ db *sql.DB }

const mysqlTable = `CREATE TABLE IF NOT EXISTS durability (k VARBINARY(64) PRIMARY KEY, v BLOB NOT NULL) ENGINE=InnoDB`

func newMySQLClient(uri string) (serverClient, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("mariadb: bad URI")
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
	cfg.Logger = quiet{} // a connection the crash cut is expected
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, mysqlTable); err != nil {
		db.Close()
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	return &mysqlClient{db}, nil
}

func (m *mysqlClient) write(kvs [][]byte) error {
	q := "INSERT INTO durability (k, v) VALUES "
	args := make([]any, 0, len(kvs))
	for i := 0; i < len(kvs); i += 2 {
		if i > 0 {
			q += ", "
		}
		q += "(?, ?)"
		args = append(args, kvs[i], kvs[i+1])
	}
	q += " ON DUPLICATE KEY UPDATE v = VALUES(v)"
	_, err := m.db.Exec(q, args...)
	return err
}

func (m *mysqlClient) get(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := m.db.QueryRowContext(ctx, "SELECT v FROM durability WHERE k = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	return v, err
}

func (m *mysqlClient) Close() error { return m.db.Close() }

type quiet struct{}

func (quiet) Print(...any) {}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
