package cli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"storebench/internal/home"
	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/server"
	"storebench/internal/server/proc"
	"storebench/internal/target"
)

const serverUsageText = `
Usage: storebench server install|start|stop|status [NAME...] [flags]

Manages the servers storebench runs itself. You rarely need this: a study
that names a server target (redis, postgres, mysql, cassandra, mongodb,
memcached) installs, starts and stops its server automatically. Use it to
keep a server up between runs, or to point another tool at it.

  install NAME...|all   install (apt, Maven, ...), idempotent
  start NAME            start in ~/.cache/storebench/servers/NAME (under
                        $STOREBENCH_HOME when set), print its URI
                        (already running: print that one's; one start or
                        stop of NAME at a time, the next waits for it)
  stop NAME             stop it cleanly (kill after 30 s)
  status [NAME...]      installed? running? where?

Servers: %s.

Examples:
  storebench server install all
  storebench server start postgres --durability async
  storebench run ledger --targets "$(storebench server start redis --uri-only)"
  storebench server stop postgres
`

// serverUsage is the --help text of `storebench server`, its list of
// servers made from the registry, so that it names every one.
func serverUsage() string {
	var lines []string
	line := ""
	for _, name := range serverNames() {
		if line != "" && len(line)+len(name)+2 > 64 {
			lines = append(lines, line+",")
			line = ""
		}
		if line != "" {
			line += ", "
		}
		line += name
	}
	lines = append(lines, line)
	return fmt.Sprintf(serverUsageText, strings.Join(lines, "\n  "))
}

// serverHome is where `storebench server start` keeps instances:
// servers/ under storebench's home ($STOREBENCH_HOME, else
// ~/.cache/storebench), whatever the current directory. Servers that
// drop privileges (PostgreSQL, MariaDB) must reach their data: where the
// home lies under a directory other users cannot traverse (root's 0700
// home), the instances live in this user's directory under the system's
// temporary directory instead, the same one at every call.
func serverHome() (string, error) {
	d := home.Sub("servers")
	if home.OthersTraverse(filepath.Dir(d)) {
		return d, nil
	}
	// One directory per home: two homes (a test's, the suite's) never
	// share instances.
	sum := sha256.Sum256([]byte(d))
	alt, err := home.Shared(fmt.Sprintf("storebench-%d-%x", os.Getuid(), sum[:6]))
	if err != nil {
		return "", fmt.Errorf("%s is not reachable by other users, and its instances cannot go elsewhere: %w", filepath.Dir(d), err)
	}
	return filepath.Join(alt, "servers"), nil
}

func cmdServer(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("server", serverUsage(), stderr)
	if code, stop := fs.parse(args, stdout); stop {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return exitUsage
	}
	opts := startOpts{durability: kv.Durability(fs.str("durability")), durabilitySet: fs.given("durability"),
		port: fs.num("port"), uriOnly: fs.on("uri-only")}
	if opts.port < 0 || opts.port > 65535 {
		return fail(stderr, usagef("--port %d: want 1..65535, or 0 for a free one", opts.port))
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
	ctx, stopSignals := notifyInterrupt(context.Background())
	defer stopSignals()
	code := exitOK
	for _, name := range names {
		srv, err := server.Lookup(name)
		if err != nil {
			if info, terr := target.Lookup(name); terr == nil && info.ByURIOnly() {
				// Aerospike: a target by URI only.
				return fail(stderr, usagef("server %s: storebench runs no %s server (%s); a study names one by URI: %s", name, info.Title, info.WhyNoServer(), info.URIExample()))
			}
			return fail(stderr, usagef("%v", err))
		}
		var c int
		switch verb {
		case "install":
			c = serverInstall(ctx, srv, stdout, stderr)
		case "start":
			c = serverStart(ctx, srv, opts, stdout, stderr)
		case "stop":
			c = serverStop(ctx, srv, stdout, stderr)
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

// startedDurability is the Settings key, in a `server start` instance's
// state, of the --durability it was started with.
const startedDurability = "storebench_start_durability"

// startMismatch says how a running instance differs from what a start
// asked for: an explicit --durability (dSet) or a --port (not 0) it was
// not started with; "" when it is what was asked.
func startMismatch(inst *server.Instance, d kv.Durability, dSet bool, port int) string {
	var why []string
	if port != 0 {
		if u, err := url.Parse(inst.URI); err == nil && u.Port() != "" && u.Port() != strconv.Itoa(port) {
			why = append(why, fmt.Sprintf("on port %s, not --port %d", u.Port(), port))
		}
	}
	if dSet {
		if got := inst.Settings[startedDurability]; got != "" && got != string(d) {
			why = append(why, fmt.Sprintf("with --durability %s, not %s", got, d))
		}
	}
	return strings.Join(why, " and ")
}

// startOpts are what storebench server start is asked for.
type startOpts struct {
	durability    kv.Durability
	durabilitySet bool // --durability given, not its default
	port          int  // 0: a free one
	uriOnly       bool // print only the URI
}

func serverStart(ctx context.Context, srv server.Server, o startOpts, stdout, stderr io.Writer) int {
	if o.durability != kv.Sync && o.durability != kv.Async {
		return fail(stderr, usagef("--durability: %q: want sync or async", o.durability))
	}
	var log io.Writer = stderr
	if o.uriOnly {
		log = io.Discard
	}
	sh, err := serverHome()
	if err != nil {
		return fail(stderr, err)
	}
	// One start or stop of an instance at a time, across processes: a
	// second start waits for the first, then finds it running.
	unlock, err := server.LockInstance(ctx, sh, srv.Name(), server.LockWait, stderr)
	if err != nil {
		return failLocked(ctx, stderr, err)
	}
	defer unlock()
	if inst, err := server.LoadState(sh, srv.Name()); err == nil && server.Alive(inst.PID) {
		return startedAlready(srv, inst, o, stdout, stderr)
	}
	if err := srv.Check(); err != nil {
		return fail(stderr, err)
	}
	dir, err := filepath.Abs(filepath.Join(sh, srv.Name()))
	if err != nil {
		return fail(stderr, err)
	}
	// Emptied, not removed: the directory carries the lock.
	if err := server.ClearInstanceDir(sh, srv.Name()); err != nil {
		return fail(stderr, err)
	}
	t0 := time.Now()
	if err := server.ReapLeftovers(ctx, log); err != nil {
		fmt.Fprintln(stderr, "storebench:", err)
	}
	// Detached: this server is meant to outlive this command.
	inst, err := startLeased(ctx, srv, sh, server.Config{Dir: dir, Port: o.port, Durability: o.durability, Log: log, Detach: true})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "storebench: %s start interrupted; stopped what it had started\n", srv.Name())
			return exitInterrupted
		}
		return fail(stderr, err)
	}
	if o.uriOnly {
		fmt.Fprintln(stdout, inst.URI)
	} else {
		fmt.Fprintf(stdout, "%s %s: ready in %.1fs, pid %d, %s\n", srv.Name(), inst.Version, time.Since(t0).Seconds(), inst.PID, redact.Text(inst.URI))
	}
	return exitOK
}

// startedAlready answers a start of an instance that is running: its
// URI, or a usage error when it runs otherwise than asked.
func startedAlready(srv server.Server, inst *server.Instance, o startOpts, stdout, stderr io.Writer) int {
	if why := startMismatch(inst, o.durability, o.durabilitySet, o.port); why != "" {
		return fail(stderr, usagef("server start %s: already running (pid %d) %s; stop it first (storebench server stop %s) or start it without that flag", srv.Name(), inst.PID, why, srv.Name()))
	}
	if o.uriOnly {
		fmt.Fprintln(stdout, inst.URI)
	} else {
		fmt.Fprintf(stdout, "%s: already running (pid %d) at %s\n", srv.Name(), inst.PID, redact.Text(inst.URI))
	}
	return exitOK
}

// startLeased starts srv as cfg says and saves its state under sh, with
// the durability it was started with. Every process the start spawns is
// leased until the state is saved: a start that fails or is interrupted
// stops them here, and should this process be killed, the next start of
// any storebench does.
func startLeased(ctx context.Context, srv server.Server, sh string, cfg server.Config) (*server.Instance, error) {
	var (
		mu       sync.Mutex // a cluster's nodes start at once
		spawned  []*proc.Handle
		releases []func()
		leaseErr error
	)
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	sctx := proc.WithStarted(ctx, func(h *proc.Handle) {
		mu.Lock()
		defer mu.Unlock()
		spawned = append(spawned, h)
		r, err := server.LeaseProcess(srv.Name(), h.PID, cfg.Dir)
		if err != nil {
			leaseErr = errors.Join(leaseErr, err)
			return
		}
		releases = append(releases, r)
	})
	inst, err := srv.Start(sctx, cfg)
	mu.Lock()
	defer mu.Unlock()
	if err == nil {
		err = leaseErr
		if err == nil {
			// What was asked, so that a later start can tell a running
			// instance of another durability from the one it wants.
			if inst.Settings == nil {
				inst.Settings = map[string]string{}
			}
			inst.Settings[startedDurability] = string(cfg.Durability)
			err = server.SaveState(sh, inst)
		}
		if err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
			_ = inst.Stop(stopCtx)
			cancel()
		}
	}
	if err != nil {
		// Whatever the server package left running is stopped too.
		for _, h := range spawned {
			_ = proc.Stop(context.Background(), h, stopSignal(srv), 5*time.Second)
		}
	}
	return inst, err
}

func stopSignal(srv server.Server) syscall.Signal {
	if ss, ok := srv.(server.StopSignaler); ok {
		return ss.StopSignal()
	}
	return syscall.SIGTERM
}

// failLocked reports a lock that could not be taken: exit 130 when the
// user gave up (Ctrl-C), else 1.
func failLocked(ctx context.Context, stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "storebench: "+err.Error())
	if ctx.Err() != nil {
		return exitInterrupted
	}
	return exitFailed
}

func serverStop(ctx context.Context, srv server.Server, stdout, stderr io.Writer) int {
	sh, err := serverHome()
	if err != nil {
		return fail(stderr, err)
	}
	unlock, err := server.LockInstance(ctx, sh, srv.Name(), server.LockWait, stderr)
	if err != nil {
		return failLocked(ctx, stderr, err)
	}
	defer unlock()
	inst, err := server.LoadState(sh, srv.Name())
	if err != nil || !server.Alive(inst.PID) {
		fmt.Fprintf(stdout, "%s: not running\n", srv.Name())
		return exitOK
	}
	sctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
	defer cancel()
	if err := inst.Stop(sctx); err != nil {
		return fail(stderr, fmt.Errorf("stopping %s: %w", srv.Name(), err))
	}
	if err := server.RemoveState(sh, srv.Name()); err != nil {
		return fail(stderr, err)
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
	sh, err := serverHome()
	if err != nil {
		fmt.Fprintf(stdout, "%-10s %s; %v\n", srv.Name(), installed, err)
		return exitFailed
	}
	inst, err := server.LoadState(sh, srv.Name())
	if err == nil && server.Alive(inst.PID) {
		running = fmt.Sprintf("running, pid %d, %s", inst.PID, redact.Text(inst.URI))
	}
	if holder, busy := server.InstanceBusy(sh, srv.Name()); busy {
		running += fmt.Sprintf(" (%s is starting or stopping it)", holder)
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
	// Servers runs started for themselves, and those a `server start` has
	// spawned but not yet recorded: listed, so that none is ever
	// invisible, and a leftover of a dead storebench is named as such.
	leased, err := server.Leased()
	absHome, _ := filepath.Abs(sh)
	for _, l := range leased {
		if l.Name != srv.Name() || l.PID == 0 {
			continue
		}
		owner := fmt.Sprintf("started by the run of storebench pid %d", l.Owner)
		if filepath.Dir(l.Dir) == absHome {
			owner = fmt.Sprintf("being started by storebench pid %d", l.Owner)
		}
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
