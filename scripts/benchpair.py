"""What bench_native.py and bench_ycsb.py share: storebench's own servers
started and stopped around a tool's runs (every one started is stopped,
whatever fails), where each side runs, and the loop over the pairs asked
for.

BIN (default bin/storebench) is the storebench binary both drive.
BASE, when set, is a second storebench binary (an older build, say) run
in the same rounds as BIN against the same native runs, the order of
the three rotating from round to round: each pair then reports BASE's
ratio beside BIN's, and BIN/BASE over the rounds, so a change is judged
within one run and not across two that a drift of the machine separates.

PLACEMENT (default "shared,separated") says where the sides run, each
placement a pass over every pair: "shared", everything on every core
(client and server share them); "separated", the server's whole process
tree pinned to the upper half of the CPUs and the load generator, the
native tool or storebench alike, to the lower half (taskset), as a run on
a machine shape places storebench's load generator (docs/machines.md).
A separated pair's name ends "[separated]".
"""
import glob
import os
import statistics
import subprocess
import sys
import urllib.parse

BIN = os.environ.get("BIN", "bin/storebench")
BASE = os.environ.get("BASE", "")
started = []
PLACEMENTS = [p for p in os.environ.get("PLACEMENT", "shared,separated").split(",") if p]
placement = ["shared"]  # the pass under way


def _halves():
    cpus = sorted(os.sched_getaffinity(0))
    cut = len(cpus) // 2
    return ",".join(map(str, cpus[:cut])), ",".join(map(str, cpus[cut:]))


def client():
    """The command prefix that places a load generator: its own CPUs when
    the pass is separated, none when shared."""
    if placement[0] != "separated":
        return []
    return ["taskset", "-c", _halves()[0]]


def suffix():
    """What a pair's name carries for the pass under way."""
    return " [separated]" if placement[0] == "separated" else ""


def _tree(pid):
    """pid and every process descended from it."""
    children = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def pin_server(uri):
    """In a separated pass, pins the server's whole process tree (every
    thread) to the upper half of the CPUs; what it forks later inherits it."""
    if placement[0] != "separated":
        return
    cpus = _halves()[1]
    for pid in _tree(server_pid(uri)):
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], capture_output=True)


def sides():
    """The storebench binaries each round runs: BIN, and BASE when set."""
    return [BIN, BASE] if BASE else [BIN]


def rotated(fns, r):
    """fns in round r's order: each starts one round in len(fns)."""
    k = r % len(fns)
    return fns[k:] + fns[:k]


_flags = {}


def knows(binary, flag):
    """Whether a storebench binary's run takes flag (an older BASE may
    predate it)."""
    if (binary, flag) not in _flags:
        p = subprocess.run([binary, "run", "--help"], capture_output=True, text=True)
        _flags[(binary, flag)] = flag in p.stdout + p.stderr
    return _flags[(binary, flag)]


def run_args(binary, args, allow):
    """args of a run for binary, with --allow-nonempty ALLOW where the
    binary knows it (one that does not has no occupancy check to pass)."""
    if knows(binary, "--allow-nonempty"):
        return [*args, "--allow-nonempty", allow]
    return list(args)


def sb(*args, capture=True, binary=None):
    """Runs storebench (BIN unless binary is given; a run placed as the
    pass says); its stdout, or RuntimeError with its last error line."""
    prefix = client() if args and args[0] == "run" else []
    p = subprocess.run([*prefix, binary or BIN, *args], capture_output=capture, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"storebench {' '.join(args[:3])}: {p.stderr.strip().splitlines()[-1:] if p.stderr else p.returncode}")
    return p.stdout.strip()


def start(server, *extra):
    """Starts storebench's managed server; its URI. A server of that name
    already running is refused: server start would hand its URI back,
    and the bench would then measure beside its other clients and stop
    it at the end (make test's servers, during a CI run)."""
    for line in sb("server", "status").splitlines():
        f = line.split()
        if f and f[0] == server and "running," in f:
            raise RuntimeError(f"{server} is already running (another run's server, make test's?): "
                               f"stop it first ({BIN} server stop {server}) or wait for its run to end")
    uri = sb("server", "start", server, "--uri-only", *extra)
    started.append(server)
    pin_server(uri)
    return uri


def stop(server):
    subprocess.run([BIN, "server", "stop", server], capture_output=True)
    if server in started:
        started.remove(server)


def redis_cli(uri, *cmd):
    """Runs one redis-cli command on the Redis database of uri (the
    password by argument, never on the screen)."""
    u = urllib.parse.urlparse(uri)
    subprocess.run(["redis-cli", "-h", u.hostname, "-p", str(u.port), "-n", u.path.strip("/") or "0", "--no-auth-warning",
                    "-a", urllib.parse.unquote(u.password or ""), *cmd], capture_output=True, check=True)


def server_pid(uri):
    """The PID of the process listening on the URI's loopback port (the
    managed server's main process), from /proc/net/tcp and /proc/*/fd."""
    port = urllib.parse.urlparse(uri).port
    inodes = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(f).read().splitlines()[1:]
        except OSError:
            continue
        for l in lines:
            fields = l.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return int(fd.split("/")[2])
    raise RuntimeError(f"no process listens on port {port}")


def proc_cpu(pid):
    """CPU seconds of a process and of every process under it, live or
    exited (PostgreSQL's backends). A backend still running is counted
    from its own stat: the exited ones alone (cutime) left a client's
    backends that had not exited yet out of its window and put them in
    the next side's."""
    ticks = 0
    for p in _tree(pid):
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited between the listing and the read: missed (its parent may be read before it reaps it)
        ticks += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def med(xs):
    return statistics.median(xs)


def run_pairs(tool, pairs, fns, report):
    """Runs fns[p]() for each pair p asked for, then report(); on a failure
    reports what was measured and exits 1; stops every server started."""
    for p in pairs:
        if p not in fns:
            sys.exit(f"{tool}: unknown pair {p!r} (have {', '.join(fns)})")
    for pl in PLACEMENTS:
        if pl not in ("shared", "separated"):
            sys.exit(f"{tool}: PLACEMENT {pl!r}: want shared, separated or both (shared,separated)")
    try:
        for pl in PLACEMENTS:
            placement[0] = pl
            cl, sv = _halves()
            print(f"-- placement: {pl}" + (f" (load generators on CPUs {cl}, servers on {sv})" if pl == "separated" else " (every side on every CPU)"), flush=True)
            for p in pairs:
                fns[p]()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"{tool}: {e}", file=sys.stderr)
        report()
        sys.exit(1)
    finally:
        for s in list(started):
            stop(s)
    report()
