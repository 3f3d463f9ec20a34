package ferretdb

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	fdb "github.com/FerretDB/FerretDB/ferretdb"

	"storebench/internal/kv"
	"storebench/internal/server"
	// The PostgreSQL server package: started by the server main below,
	// in storebench's binary and in test binaries alike.
	_ "storebench/internal/server/postgres"
	"storebench/internal/server/proc"
)

// PGName is the registry name of FerretDB on a managed PostgreSQL, its
// production backend.
const PGName = "ferretdb-pg"

// pgReadyTimeout bounds start-up: PostgreSQL's cluster (initdb, or a copy
// of a cached one) and its start come first.
const pgReadyTimeout = 90 * time.Second

// pgStopTimeout bounds a clean stop: FerretDB's own (a few seconds for
// open connections), then PostgreSQL's fast shutdown.
const pgStopTimeout = 2 * server.DefaultStopTimeout

// pgSettingsFile is where the server main writes the PostgreSQL
// instance's settings (no URI, no password) for the starting process.
const pgSettingsFile = "postgres-settings.json"

func init() {
	server.Register(PGServer{})
	server.RegisterMain(PGName, pgServerMain)
}

// PGServer starts FerretDB with its PostgreSQL backend. One process of
// storebench's binary (`storebench server-main ferretdb-pg`) starts a
// managed PostgreSQL as its own child, then serves FerretDB on it; so the
// instance's PID is the root of a tree holding both, and the RSS and CPU
// measured are those of the two together. The generated PostgreSQL
// password never leaves that process: no argv, no file, no log.
type PGServer struct{}

func (PGServer) Name() string { return PGName }

// Title names it as what it is: a report's column is the part before
// " (", "FerretDB on PostgreSQL".
func (PGServer) Title() string {
	return "FerretDB on PostgreSQL (MongoDB wire protocol, PostgreSQL backend)"
}

// Check is PostgreSQL's: FerretDB is built into storebench.
func (PGServer) Check() error {
	s, err := server.Lookup("postgres")
	if err != nil {
		return err
	}
	return s.Check()
}

// Install installs PostgreSQL.
func (PGServer) Install(ctx context.Context, log io.Writer) error {
	s, err := server.Lookup("postgres")
	if err != nil {
		return err
	}
	return s.Install(ctx, log)
}

// Start runs `<this executable> server-main ferretdb-pg ...` and waits
// until FerretDB answers a ping over the MongoDB wire protocol (which it
// does only once PostgreSQL is up).
func (s PGServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	durability := "sync"
	switch cfg.Durability {
	case kv.Sync, "":
	case kv.Async:
		durability = "async"
	default:
		return nil, fmt.Errorf("ferretdb-pg: unknown durability %q", cfg.Durability)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	dir, settingsPath, err := pgInstanceDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "ferretdb.log")
	port, err := cfg.ListenPort()
	if err != nil {
		return nil, err
	}
	exe, err := self(PGName)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"server-main", PGName, "-listen", addr, "-dir", dir, "-log", logPath,
		"-durability", durability, "-memory", strconv.FormatInt(cfg.MemoryBytes, 10)}
	proc.Logf(cfg.Log, "ferretdb-pg: starting PostgreSQL then FerretDB on %s in %s, log %s", addr, dir, logPath)
	t0 := time.Now()
	h, mongoVersion, err := launch(ctx, proc.Spec{Name: PGName, Path: exe, Args: args, Dir: dir, LogPath: logPath, Detach: cfg.Detach},
		port, pgReadyTimeout, abandonPG)
	if err != nil {
		return nil, err
	}
	pg, err := readPGSettings(settingsPath)
	if err != nil {
		abandonPG(h)
		return nil, fmt.Errorf("ferretdb-pg: %w", err)
	}
	proc.Logf(cfg.Log, "ferretdb-pg: ready in %v (pid %d, PostgreSQL pid %d)", time.Since(t0).Round(time.Millisecond), h.PID, pg.PID)
	return &server.Instance{
		Name:     PGName,
		URI:      mongoURI(addr),
		PID:      h.PID,
		DataDir:  pg.DataDir,
		LogPath:  logPath,
		Version:  moduleVersion(),
		Settings: pgSettings(h.PID, pg, addr, mongoVersion),
		StopFunc: pgStop(h),
	}, nil
}

// pgInstanceDir makes the instance directory dir, absolute, and clears
// the settings file a start's server main writes there: a stale one from
// an earlier start must not pass for this one's.
func pgInstanceDir(dir string) (abs, settingsPath string, err error) {
	if abs, err = filepath.Abs(dir); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", "", err
	}
	settingsPath = filepath.Join(abs, pgSettingsFile)
	if err := os.Remove(settingsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("ferretdb-pg: %w", err)
	}
	return abs, settingsPath, nil
}

// pgStop stops the instance h: SIGTERM, on which the server main stops
// FerretDB, then PostgreSQL, then exits. Were it killed instead,
// PostgreSQL would get SIGKILL from the kernel (its parent-death signal).
func pgStop(h *proc.Handle) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := proc.Stop(ctx, h, syscall.SIGTERM, pgStopTimeout); err != nil {
			return fmt.Errorf("ferretdb-pg: %w", err)
		}
		return nil
	}
}

// abandonPG stops an instance whose start failed.
func abandonPG(h *proc.Handle) {
	sctx, cancel := context.WithTimeout(context.Background(), pgStopTimeout)
	defer cancel()
	_ = pgStop(h)(sctx)
}

// pgSettings describe the instance whose server main is pid, from the
// settings of the PostgreSQL it runs.
func pgSettings(pid int, pg pgInfo, addr, mongoVersion string) map[string]string {
	settings := map[string]string{
		"server": "FerretDB " + moduleVersion() + " (embedded Go package " + modulePath + "/ferretdb, handler postgresql, run as `storebench server-main ferretdb-pg`)",
		"backend": "PostgreSQL " + pg.Version + " (managed, started by the FerretDB process as its child: " +
			"the measured process tree holds both), one schema per database, documents as jsonb",
		"process_tree": fmt.Sprintf("pid %d (FerretDB) with PostgreSQL (pid %d) and its workers below it", pid, pg.PID),
		"listen":       addr,
	}
	if m := pg.Settings["durability_mapping"]; m != "" {
		settings["durability"] = "PostgreSQL " + m
	}
	for _, k := range []string{"synchronous_commit", "shared_buffers", "fsync", "auth"} {
		if v := pg.Settings[k]; v != "" {
			settings["postgres."+k] = v
		}
	}
	if mongoVersion != "" {
		settings["wire_compat"] = "reports MongoDB " + mongoVersion + " in buildInfo (compatibility version, not a MongoDB server)"
	}
	return settings
}

// pgInfo is what the server main tells the starting process about the
// PostgreSQL it runs: never its URI, which carries the password.
type pgInfo struct {
	PID      int               `json:"pid"`
	Version  string            `json:"version"`
	DataDir  string            `json:"data_dir"`
	Settings map[string]string `json:"settings"`
}

func readPGSettings(path string) (pgInfo, error) {
	var pg pgInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return pg, fmt.Errorf("reading PostgreSQL's settings: %w", err)
	}
	if err := json.Unmarshal(b, &pg); err != nil {
		return pg, fmt.Errorf("reading PostgreSQL's settings %s: %w", path, err)
	}
	if pg.DataDir == "" || pg.PID <= 0 {
		return pg, fmt.Errorf("PostgreSQL's settings %s name no data directory or pid", path)
	}
	return pg, nil
}

// pgServerMain starts PostgreSQL under DIR/postgres and serves FerretDB
// on it until SIGTERM or SIGINT, then stops FerretDB and PostgreSQL, in
// that order:
//
//	storebench server-main ferretdb-pg -listen 127.0.0.1:PORT -dir DIR -log FILE -durability sync|async [-memory BYTES]
func pgServerMain(args []string) int {
	fs := flag.NewFlagSet("server-main "+PGName, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:27017", "TCP address FerretDB listens on")
	dir := fs.String("dir", "", "instance directory (PostgreSQL goes to DIR/postgres)")
	logPath := fs.String("log", "", "log file (default: standard error)")
	durability := fs.String("durability", "sync", "sync or async (PostgreSQL synchronous_commit on or off)")
	memory := fs.Int64("memory", 0, "PostgreSQL shared_buffers in bytes (0: its default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "ferretdb-pg: -dir is required")
		return 2
	}
	if *durability != "sync" && *durability != "async" {
		fmt.Fprintf(os.Stderr, "ferretdb-pg: -durability %q: want sync or async\n", *durability)
		return 2
	}
	out, closeLog, err := openLog(*logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb-pg:", err)
		return 1
	}
	defer closeLog()
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := servePG(*listen, *dir, kv.Durability(*durability), *memory, out, logger); err != nil {
		logger.Error("ferretdb-pg stopped", "error", err)
		fmt.Fprintln(os.Stderr, "ferretdb-pg:", err)
		return 1
	}
	return 0
}

func servePG(listen, dir string, d kv.Durability, memory int64, out io.Writer, logger *slog.Logger) error {
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stopSignals()
	pgSrv, err := server.Lookup("postgres")
	if err != nil {
		return err
	}
	// Tied to this process (not detached): should it die, even by
	// SIGKILL, the kernel kills PostgreSQL too.
	pg, err := pgSrv.Start(ctx, server.Config{Dir: filepath.Join(dir, "postgres"), Durability: d, MemoryBytes: memory, Log: out})
	if err != nil {
		return err
	}
	stopPG := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
		defer cancel()
		logger.Info("storebench: stopping PostgreSQL", "pid", pg.PID)
		return pg.Stop(sctx)
	}
	info := pgInfo{PID: pg.PID, Version: pg.Version, DataDir: pg.DataDir, Settings: pg.Settings}
	if err := writeJSON(filepath.Join(dir, pgSettingsFile), info); err != nil {
		return errors.Join(err, stopPG())
	}
	f, err := fdb.New(&fdb.Config{
		Listener: fdb.ListenerConfig{TCP: listen},
		Logger:   logger,
		Handler:  "postgresql",
		// The URI carries the generated password: it goes from the
		// PostgreSQL instance to FerretDB inside this process only.
		PostgreSQLURL: pg.URI,
	})
	if err != nil {
		return errors.Join(fmt.Errorf("ferretdb: %w", err), stopPG())
	}
	logger.Info("storebench: FerretDB serving on PostgreSQL", "listen", listen, "postgres_pid", pg.PID, "postgres_data", pg.DataDir)
	runErr := f.Run(ctx)
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	logger.Info("storebench: FerretDB stopped")
	if err := stopPG(); err != nil {
		return errors.Join(runErr, fmt.Errorf("stopping PostgreSQL: %w", err))
	}
	logger.Info("storebench: PostgreSQL stopped")
	return runErr
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
