"""What bench_native.py and bench_ycsb.py share: storebench's own servers
started and stopped around a tool's runs (every one started is stopped,
whatever fails), and the loop over the pairs asked for.

BIN (default bin/storebench) is the storebench binary both drive.
"""
import glob
import os
import statistics
import subprocess
import sys
import urllib.parse

BIN = os.environ.get("BIN", "bin/storebench")
started = []


def sb(*args, capture=True):
    """Runs storebench; its stdout, or RuntimeError with its last error line."""
    p = subprocess.run([BIN, *args], capture_output=capture, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"storebench {' '.join(args[:3])}: {p.stderr.strip().splitlines()[-1:] if p.stderr else p.returncode}")
    return p.stdout.strip()


def start(server, *extra):
    """Starts storebench's managed server; its URI."""
    uri = sb("server", "start", server, "--uri-only", *extra)
    started.append(server)
    return uri


def stop(server):
    subprocess.run([BIN, "server", "stop", server], capture_output=True)
    if server in started:
        started.remove(server)


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
    """CPU seconds of a process and of its children that have exited
    (PostgreSQL's backends, once their connection closed)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def med(xs):
    return statistics.median(xs)


def run_pairs(tool, pairs, fns, report):
    """Runs fns[p]() for each pair p asked for, then report(); on a failure
    reports what was measured and exits 1; stops every server started."""
    try:
        for p in pairs:
            if p not in fns:
                sys.exit(f"{tool}: unknown pair {p!r} (have {', '.join(fns)})")
            fns[p]()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"{tool}: {e}", file=sys.stderr)
        report()
        sys.exit(1)
    finally:
        for s in list(started):
            stop(s)
    report()
