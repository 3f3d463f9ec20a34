package ferretdb

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	fdb "github.com/FerretDB/FerretDB/ferretdb"
)

// sqlitePragmas are the per-connection SQLite settings the backend opens
// its database files with, by durability class. FerretDB adds its own
// defaults (busy_timeout, journal_mode=wal, auto_vacuum) only for the
// pragmas absent from the URI, so all of them are given here, in the order
// it requires (the busy handler before WAL is switched on).
//
// In WAL mode, synchronous=FULL fsyncs the WAL on every commit (a write is
// durable when acknowledged); synchronous=NORMAL fsyncs only at
// checkpoints (a power loss can lose the last commits, a crash of the
// process cannot).
func sqlitePragmas(sync bool) []string {
	mode := "normal"
	if sync {
		mode = "full"
	}
	return []string{
		"busy_timeout(10000)",
		"journal_mode(wal)",
		"synchronous(" + mode + ")",
		"auto_vacuum(none)",
	}
}

// sqliteURL is the backend's URI: a directory (with the trailing slash it
// requires) holding one SQLite file per database.
func sqliteURL(dataDir string, sync bool) string {
	q := url.Values{"_pragma": sqlitePragmas(sync)}
	// Escaped: a '#', '?' or '%' in the directory's path (a space too)
	// would otherwise end or change it.
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(filepath.Clean(dataDir)) + "/", RawQuery: q.Encode()}
	return u.String()
}

// openLog opens a server main's log, appending to the file at path
// (standard error when path is empty); closeLog closes it.
func openLog(path string) (out io.Writer, closeLog func(), err error) {
	if path == "" {
		return os.Stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// serverMain serves FerretDB in this process until SIGTERM or SIGINT:
//
//	storebench server-main ferretdb -listen 127.0.0.1:PORT -data DIR -log FILE -durability sync|async
func serverMain(args []string) int {
	fs := flag.NewFlagSet("server-main ferretdb", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:27017", "TCP address to listen on")
	data := fs.String("data", "", "SQLite data directory (created if missing)")
	logPath := fs.String("log", "", "log file (default: standard error)")
	durability := fs.String("durability", "sync", "sync (SQLite synchronous=FULL) or async (synchronous=NORMAL)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *data == "" {
		fmt.Fprintln(os.Stderr, "ferretdb: -data is required")
		return 2
	}
	if *durability != "sync" && *durability != "async" {
		fmt.Fprintf(os.Stderr, "ferretdb: -durability %q: want sync or async\n", *durability)
		return 2
	}
	out, closeLog, err := openLog(*logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		return 1
	}
	defer closeLog()
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := serve(*listen, *data, *durability == "sync", logger); err != nil {
		logger.Error("ferretdb stopped", "error", err)
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		return 1
	}
	return 0
}

func serve(listen, dataDir string, sync bool, logger *slog.Logger) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	f, err := fdb.New(&fdb.Config{
		Listener:  fdb.ListenerConfig{TCP: listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL(dataDir, sync),
	})
	if err != nil {
		return err
	}
	logger.Info("storebench: FerretDB serving", "listen", listen, "data", dataDir, "sync", sync)
	if err := f.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Info("storebench: FerretDB stopped")
	return nil
}
