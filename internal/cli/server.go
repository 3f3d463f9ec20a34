package cli

import (
	"context"

	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/server"
)

const serverUsage = `
Usage: storebench server install|start|stop|status [NAME...] [flags]

Manages the servers storebench runs itself. You rarely need this: a study
that names a server target (redis, postgres, mysql, cassandra, mongodb,
memcached) installs, starts and stops its server automatically. Use it to
keep a server up between runs, or to point another tool at it.

  install NAME...|all   install (apt, Maven, ...), idempotent
  start NAME            start in .storebench/servers/NAME, print its URI
  stop NAME             stop it cleanly (kill after 30 s)
  status [NAME...]      installed? running? where?

Servers: redis, postgres, mariadb, cassandra, ferretdb, memcached.

Examples:
  storebench server install all
  storebench server start postgres --durability async
  storebench run ledger --targets "$(storebench server start redis --uri-only)"
  storebench server stop postgres
`

// serverHome is where `storebench server start` keeps instances.
func serverHome() string {
	if h := os.Getenv("STOREBENCH_HOME"); h != "" {
		return filepath.Join(h, "servers")
	}
	return filepath.Join(".storebench", "servers")
}

func cmdServer(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("server", serverUsage, stderr)
	durability := fs.String("durability", "sync", "sync or async: how the server makes writes durable")
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: a free one)")
	uriOnly := fs.Bool("uri-only", false, "start: print only the URI")
	if code, stop := parse(fs, args, stdout); stop {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return exitUsage
	}
	verb, names := fs.Arg(0), fs.Args()[1:]
	switch verb {
	case "install", "start", "stop", "status":
	default:
		if _, err := server.Lookup(verb); err == nil {
			return fail(stderr, usagef("server %s: say what to do first: install, start, stop or status (e.g. storebench server start %s)", verb, verb))
		}
		return fail(stderr, usagef("server %s: unknown server and unknown action (servers: %s; actions: install, start, stop, status)", verb, strings.Join(serverNames(), ", ")))
	}
	if (verb == "install" || verb == "status") && (len(names) == 0 || names[0] == "all") {
		names = nil
		for _, s := range server.All() {
			names = append(names, s.Name())
		}
	}
	if len(names) == 0 {
		return fail(stderr, usagef("server %s needs a server name (%s)", verb, strings.Join(serverNames(), ", ")))
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	code := exitOK
	for _, name := range names {
		srv, err := server.Lookup(name)
		if err != nil {
			return fail(stderr, usagef("%v", err))
		}
		var c int
		switch verb {
		case "install":
			c = serverInstall(ctx, srv, stdout, stderr)
		case "start":
			c = serverStart(ctx, srv, kv.Durability(*durability), *port, *uriOnly, stdout, stderr)
		case "stop":
			c = serverStop(srv, stdout, stderr)
		case "status":
			c = serverStatus(srv, stdout)
		}
		if c != exitOK {
			code = c
		}
	}
	return code
}

func serverNames() []string {
	var out []string
	for _, s := range server.All() {
		out = append(out, s.Name())
	}
	return out
}

func serverInstall(ctx context.Context, srv server.Server, stdout, stderr io.Writer) int {
	if srv.Check() == nil {
		fmt.Fprintf(stdout, "%s: installed\n", srv.Name())
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: installing ...\n", srv.Name())
	if err := srv.Install(ctx, stdout); err != nil {
		return fail(stderr, fmt.Errorf("installing %s: %w", srv.Name(), err))
	}
	if err := srv.Check(); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "%s: installed\n", srv.Name())
	return exitOK
}

func serverStart(ctx context.Context, srv server.Server, d kv.Durability, port int, uriOnly bool, stdout, stderr io.Writer) int {
	if d != kv.Sync && d != kv.Async {
		return fail(stderr, usagef("--durability: %q: want sync or async", d))
	}
	home := serverHome()
	if inst, err := server.LoadState(home, srv.Name()); err == nil && server.Alive(inst.PID) {
		if uriOnly {
			fmt.Fprintln(stdout, inst.URI)
		} else {
			fmt.Fprintf(stdout, "%s: already running (pid %d) at %s\n", srv.Name(), inst.PID, redact.Text(inst.URI))
		}
		return exitOK
	}
	if err := srv.Check(); err != nil {
		return fail(stderr, err)
	}
	dir, err := filepath.Abs(filepath.Join(home, srv.Name()))
	if err != nil {
		return fail(stderr, err)
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(stderr, err)
	}
	var log io.Writer = stderr
	if uriOnly {
		log = io.Discard
	}
	t0 := time.Now()
	if err := server.ReapLeftovers(ctx, log); err != nil {
		fmt.Fprintln(stderr, "storebench:", err)
	}
	// Detached: this server is meant to outlive this command.
	inst, err := srv.Start(ctx, server.Config{Dir: dir, Port: port, Durability: d, Log: log, Detach: true})
	if err != nil {
		return fail(stderr, err)
	}
	if err := server.SaveState(home, inst); err != nil {
		return fail(stderr, err)
	}
	if uriOnly {
		fmt.Fprintln(stdout, inst.URI)
	} else {
		fmt.Fprintf(stdout, "%s %s: ready in %.1fs, pid %d, %s\n", srv.Name(), inst.Version, time.Since(t0).Seconds(), inst.PID, redact.Text(inst.URI))
	}
	return exitOK
}

func serverStop(srv server.Server, stdout, stderr io.Writer) int {
	inst, err := server.LoadState(serverHome(), srv.Name())
	if err != nil || !server.Alive(inst.PID) {
		fmt.Fprintf(stdout, "%s: not running\n", srv.Name())
		return exitOK
	}
	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
	defer cancel()
	if err := inst.Stop(ctx); err != nil {
		return fail(stderr, fmt.Errorf("stopping %s: %w", srv.Name(), err))
	}
	fmt.Fprintf(stdout, "%s: stopped\n", srv.Name())
	return exitOK
}

func serverStatus(srv server.Server, stdout io.Writer) int {
	installed := "installed"
	if err := srv.Check(); err != nil {
		installed = "NOT INSTALLED: " + err.Error()
	}
	running := "not running"
	inst, err := server.LoadState(serverHome(), srv.Name())
	if err == nil && server.Alive(inst.PID) {
		running = fmt.Sprintf("running, pid %d, %s", inst.PID, redact.Text(inst.URI))
	}
	fmt.Fprintf(stdout, "%-10s %s; %s\n", srv.Name(), installed, running)
	// A cluster: every node, up or down.
	if err == nil && server.Alive(inst.PID) {
		for _, n := range inst.Nodes {
			state := "down"
			if n.PID() != 0 {
				state = fmt.Sprintf("running, pid %d", n.PID())
			}
			fmt.Fprintf(stdout, "%-10s %s %s: %s; %s\n", "", n.Name, n.Addr, state, n.Role)
		}
	}
	// Servers runs started for themselves: listed, so that none is ever
	// invisible, and a leftover of a dead run is named as such.
	leased, err := server.Leased()
	for _, l := range leased {
		if l.Name != srv.Name() || l.PID == 0 {
			continue
		}
		owner := fmt.Sprintf("started by the run of storebench pid %d", l.Owner)
		if !l.OwnerAlive {
			owner = fmt.Sprintf("LEFT OVER by storebench pid %d, which is gone: the next start stops it", l.Owner)
		}
		fmt.Fprintf(stdout, "%-10s running, pid %d, in %s, %s\n", "", l.PID, l.Dir, owner)
	}
	if err != nil {
		fmt.Fprintf(stdout, "%-10s %v\n", "", err)
	}
	return exitOK
}

// cmdServerMain runs a server that lives inside this binary (FerretDB).
func cmdServerMain(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, "storebench server-main: need a server name")
		return exitUsage
	}
	fn, ok := server.Main(args[0])
	if !ok {
		fmt.Fprintf(stderr, "storebench server-main: %q is not an in-process server\n", args[0])
		return exitUsage
	}
	return fn(args[1:])
}
