// Package ferretdb runs FerretDB, a server speaking the MongoDB wire
// protocol on top of SQLite, as storebench's MongoDB-protocol server: real
// mongod cannot be installed on this platform. FerretDB is embedded as a Go
// package and served by storebench's own binary in a process of its own
// (`storebench server-main ferretdb ...`) so that its RSS and CPU are
// measured apart from the harness. Reports call it FerretDB, never MongoDB.
package ferretdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Name is the server's registry name.
const Name = "ferretdb"

const modulePath = "github.com/FerretDB/FerretDB"

// readyTimeout bounds start-up; FerretDB answers in well under a second.
const readyTimeout = 30 * time.Second

func init() {
	server.Register(Server{})
	server.RegisterMain(Name, serverMain)
}

// Server starts FerretDB instances.
type Server struct{}

func (Server) Name() string { return Name }

func (Server) Title() string { return "FerretDB (MongoDB wire protocol, SQLite backend)" }

// Check returns nil: FerretDB is built into storebench.
func (Server) Check() error { return nil }

// Install has nothing to do: FerretDB is built into storebench.
func (Server) Install(ctx context.Context, log io.Writer) error {
	if log != nil {
		fmt.Fprintln(log, "ferretdb: built into storebench, nothing to install")
	}
	return nil
}

// Start runs `<this executable> server-main ferretdb ...` and waits until
// it answers a ping over the MongoDB wire protocol.
func (Server) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	sync := true
	switch cfg.Durability {
	case kv.Sync, "":
	case kv.Async:
		sync = false
	default:
		return nil, fmt.Errorf("ferretdb: unknown durability %q", cfg.Durability)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "ferretdb.log")
	port, err := cfg.ListenPort()
	if err != nil {
		return nil, err
	}
	exe, err := self(Name)
	if err != nil {
		return nil, err
	}
	durability := "sync"
	if !sync {
		durability = "async"
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"server-main", Name,
		"-listen", addr, "-data", dataDir, "-log", logPath, "-durability", durability}
	proc.Logf(cfg.Log, "ferretdb: starting on %s, data in %s, log %s", addr, dataDir, logPath)
	t0 := time.Now()
	h, mongoVersion, err := launch(ctx, proc.Spec{Name: "ferretdb", Path: exe, Args: args, Dir: dir, LogPath: logPath, Detach: cfg.Detach},
		port, readyTimeout, func(h *proc.Handle) { proc.Abandon(h, syscall.SIGTERM, 5*time.Second) })
	if err != nil {
		return nil, err
	}
	proc.Logf(cfg.Log, "ferretdb: ready in %v (pid %d)", time.Since(t0).Round(time.Millisecond), h.PID)
	version := moduleVersion()
	settings := map[string]string{
		"server":     "FerretDB " + version + " (embedded Go package " + modulePath + "/ferretdb, run as `storebench server-main ferretdb`)",
		"backend":    "SQLite (modernc.org/sqlite, pure Go), one file per database, journal_mode=WAL",
		"durability": durabilitySetting(sync),
		"sqlite":     "_pragma " + strings.Join(sqlitePragmas(sync), ", "),
		"memory":     memorySetting(cfg.MemoryBytes),
		"listen":     addr,
	}
	if mongoVersion != "" {
		settings["wire_compat"] = "reports MongoDB " + mongoVersion + " in buildInfo (compatibility version, not a MongoDB server)"
	}
	return &server.Instance{
		Name:     Name,
		URI:      mongoURI(addr),
		PID:      h.PID,
		DataDir:  dataDir,
		LogPath:  logPath,
		Version:  version,
		Settings: settings,
		StopFunc: func(ctx context.Context) error {
			// FerretDB stops on SIGTERM, giving open client connections
			// a few seconds to finish.
			if err := proc.Stop(ctx, h, syscall.SIGTERM, server.DefaultStopTimeout); err != nil {
				return fmt.Errorf("ferretdb: %w", err)
			}
			return nil
		},
	}, nil
}

// memorySetting says that FerretDB has no cache budget to size, and that a
// target's cache was therefore not applied.
func memorySetting(asked int64) string {
	s := "no cache budget: SQLite's default page cache per connection"
	if asked > 0 {
		s += fmt.Sprintf(" (the target's cache, %d MiB, not applied: FerretDB has no setting for it)", asked>>20)
	}
	return s
}

func durabilitySetting(sync bool) string {
	if sync {
		return "sync: SQLite synchronous=FULL in WAL mode (the WAL is fsynced on every commit)"
	}
	return "async: SQLite synchronous=NORMAL in WAL mode (fsync only at checkpoints; a power loss may lose recent commits)"
}

// self is storebench's own executable, which serves FerretDB (`storebench
// server-main name ...`).
func self(name string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%s: finding storebench's own executable: %w", name, err)
	}
	return exe, nil
}

// mongoURI is the URI of the instance listening on addr.
func mongoURI(addr string) string { return "mongodb://" + addr + "/storebench" }

// launch starts spec, a server main of this executable that serves
// FerretDB on 127.0.0.1:port, and waits until it answers a ping over the
// MongoDB wire protocol; abandon stops it if it does not. It returns the
// MongoDB version FerretDB reports ("" if none). Errors start with
// spec.Name.
func launch(ctx context.Context, spec proc.Spec, port int, timeout time.Duration, abandon func(h *proc.Handle)) (*proc.Handle, string, error) {
	h, err := proc.Start(ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", spec.Name, err)
	}
	uri := mongoURI("127.0.0.1:" + strconv.Itoa(port))
	var mongoVersion string
	probe := func(ctx context.Context) error {
		v, err := ping(ctx, uri)
		mongoVersion = v
		return err
	}
	// Our process, not another one on the port.
	if err := proc.WaitServing(ctx, h, port, timeout, probe); err != nil {
		abandon(h)
		return nil, "", fmt.Errorf("%s: %w", spec.Name, err)
	}
	return h, mongoVersion, nil
}

// ping connects, pings, and returns the MongoDB-compatible version
// FerretDB reports in buildInfo.
func ping(ctx context.Context, uri string) (string, error) {
	cl, err := mongo.Connect(options.Client().ApplyURI(uri).
		SetServerSelectionTimeout(2 * time.Second).
		SetConnectTimeout(2 * time.Second))
	if err != nil {
		return "", err
	}
	defer cl.Disconnect(context.Background())
	if err := cl.Ping(ctx, nil); err != nil {
		return "", err
	}
	var info struct {
		Version string `bson:"version"`
	}
	if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return "", fmt.Errorf("buildInfo: %w", err)
	}
	if info.Version == "" {
		return "", errors.New("buildInfo: no version")
	}
	return info.Version, nil
}

// PinnedVersion is the FerretDB version go.mod requires (a test checks
// it). It names the version when the binary carries no module information,
// as test binaries do not; FerretDB's own version file is absent when it is
// embedded, so its buildInfo says "unknown".
const PinnedVersion = "v1.24.0"

// moduleVersion is the FerretDB module version built into this binary.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return PinnedVersion
}
