#!/usr/bin/env python3
"""storebench side by side with the native load tools (make bench-native).

Each pair drives the same server instance, the same data and the same
connections from the native tool and from storebench, in alternating order
over ROUNDS rounds (default 5): native first in odd rounds, storebench first
in even ones, so a slow drift of the machine falls on both sides.

For every pair it prints the median throughput of each side with its
min-max, the median of the per-round ratios storebench/native with their
min-max (goal: >= 1.0), and each side's client CPU time per operation, from
the kernel's accounting of the process that generated the load:
getrusage(RUSAGE_CHILDREN) around the native tool, and the storebench
worker's own CPU over the timed window of the step (results.json:
resources.timed). On this 2-core machine the client and the server share
the cores, so the client's CPU per operation is what decides the figure,
and it holds even when throughput is noisy. PLACEMENT (benchpair.py) runs
every pair shared and separated (each side on cores of its own) by
default: both ratios are printed.

Environment: BIN (default bin/storebench), BASE (a second storebench
binary run in the same rounds: see benchpair.py), ROUNDS (default 5),
PAIRS (a comma-separated subset of redis,pgbench,http,sysbench,memcached),
BENCH_JSON (a file to write every raw figure to).
"""
import glob
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import urllib.parse

from benchpair import BASE, BIN, client, med, redis_cli, rotated, run_args, run_pairs, sb, sides, start, stop, suffix

ROUNDS = int(os.environ.get("ROUNDS", "5"))
PAIRS = [p for p in os.environ.get("PAIRS", "redis,pgbench,http,sysbench,memcached").split(",") if p]
OUT = tempfile.mkdtemp(prefix="bench-native-")
rows = []  # one per pair: name, native[(rate, cpu_s, ops)], ours[...], BASE's [...] (empty without BASE)


def native(cmd, parse, env=None):
    """Runs a native tool; returns (rate/s, client CPU seconds, ops)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([*client(), *cmd], capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        rate, ops = parse(p.stdout)
    except Exception:
        raise RuntimeError(f"{cmd[0]} printed nothing usable (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-300:]}")
    return rate, cpu, ops


_run = [0]


def ours(study, uri, sets, phases, rate_metric, binary=BIN):
    """Runs a storebench study with binary; returns {phase: (rate/s, worker CPU seconds, ops)}."""
    _run[0] += 1
    d = os.path.join(OUT, f"{study}-{_run[0]}")
    # The native tool's own keys and tables (redis-benchmark's key:*,
    # pgbench's pgbench_*) share the server: storebench runs beside them,
    # under its own names (a non-empty server is refused without this).
    args = run_args(binary, ["run", study, "--targets", uri, "--out", d, "--quiet"], uri)
    for s in sets:
        args += ["--set", s]
    sb(*args, binary=binary)
    res = json.load(open(glob.glob(d + "/*/results.json")[0]))
    t = res["targets"][0]
    if t.get("status") != "ok":
        raise RuntimeError(f"storebench {study}: {t.get('reason')}")
    out = {}
    for s in t["steps"]:
        if s["phase"] not in phases:
            continue
        w = s["resources"]["timed"]
        cpu = (w["after"]["cpu_user_ns"] + w["after"]["cpu_sys_ns"] - w["before"]["cpu_user_ns"] - w["before"]["cpu_sys_ns"]) / 1e9
        ops = s["metrics"].get("requests", s["ops"])
        out[s["phase"]] = (s["metrics"][rate_metric], cpu, ops)
    return out


def rounds(name_natives, run_native, run_ours):
    """Runs run_native() (returns {pair: figure}) and run_ours(binary)
    (the same, for BIN and BASE when set) over ROUNDS rounds, in an order
    that rotates each round, and stores each pair's figures."""
    nat, our, base = {}, {}, {}
    runs = [(run_native, nat)] + [((lambda b=b: run_ours(b)), into) for b, into in zip(sides(), (our, base))]
    for r in range(ROUNDS):
        for fn, into in rotated(runs, r):
            for k, v in fn().items():
                into.setdefault(k, []).append(v)
        print(f"  round {r + 1}/{ROUNDS}: " + "; ".join(
            f"{k} {our[k][-1][0]:.0f}/{nat[k][-1][0]:.0f}" + (f" (BASE {base[k][-1][0]:.0f})" if k in base else "")
            for k in name_natives if k in nat and k in our), flush=True)
    for k in name_natives:
        rows.append((k + suffix(), nat[k], our[k], base.get(k, [])))


def csv_rate(tool_test):
    def parse(out):
        for line in out.splitlines():
            f = [x.strip('"') for x in line.split(",")]
            if len(f) >= 2 and f[0] == tool_test:
                return float(f[1]), None
        raise ValueError
    return parse


def pair_redis():
    print("== Redis: redis-benchmark -c 50 -n 200000 -P 1|16, SET and GET, vs storebench setget (same server, appendfsync no)", flush=True)
    uri = start("redis", "--durability", "async")
    u = urllib.parse.urlparse(uri)
    base = ["redis-benchmark", "-h", u.hostname, "-p", str(u.port), "-a", urllib.parse.unquote(u.password or ""), "-c", "50", "-n", "200000", "-q", "--csv"]
    for P in (1, 16):
        def nat():
            out = {}
            for op in ("SET", "GET"):
                rate, cpu, _ = native(base + ["-P", str(P), "-t", op.lower()], csv_rate(op))
                out[f"redis {op} -P {P}"] = (rate, cpu, 200000)
            return out

        def our(binary):
            # redis-benchmark's key:__rand_int__ is under storebench's own
            # key: prefix, which a run refuses to overwrite: empty the
            # bench's own server first.
            redis_cli(uri, "FLUSHALL")
            ph = ours("native-redis", uri, [f"setget.pipeline={P}"], ("set", "get"), "requests_per_s", binary)
            return {f"redis SET -P {P}": ph["set"], f"redis GET -P {P}": ph["get"]}
        rounds([f"redis SET -P {P}", f"redis GET -P {P}"], nat, our)
    stop("redis")


def pair_pgbench():
    print("== PostgreSQL: pgbench -S -c 8 -j 2 -T 10 -M prepared vs storebench pointselect (same server and tables)", flush=True)
    uri = start("postgres", "--durability", "async")
    u = urllib.parse.urlparse(uri)
    env = dict(os.environ, PGHOST=u.hostname, PGPORT=str(u.port), PGUSER=u.username, PGDATABASE=u.path.strip("/"), PGPASSWORD=urllib.parse.unquote(u.password or ""))
    subprocess.run(["pgbench", "-i", "-s", "1", "-q"], env=env, capture_output=True, check=True)

    def parse(out):
        n = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
        return float(re.search(r"^tps = ([\d.]+)", out, re.M).group(1)), n

    rounds(["pgbench -S"],
           lambda: {"pgbench -S": native(["pgbench", "-S", "-c", "8", "-j", "2", "-T", "10", "-M", "prepared", "-n"], parse, env)},
           lambda binary: {"pgbench -S": ours("native-pgbench", uri, [], ("select",), "tps", binary)["select"]})
    stop("postgres")


def pair_http():
    print("== HTTP: ab -t 5 -c 100 (with and without -k) and wrk -t 2 -c 100 -d 5s vs storebench http (same nginx, same page)", flush=True)
    uri = start("nginx")

    def ab_parse(out):
        return float(re.search(r"^Requests per second:\s+([\d.]+)", out, re.M).group(1)), int(re.search(r"^Complete requests:\s+(\d+)", out, re.M).group(1))

    def wrk_parse(out):
        return float(re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M).group(1)), int(re.search(r"(\d+) requests in", out).group(1))

    def nat():
        return {
            "ab (new connection)": native(["ab", "-t", "5", "-n", "10000000", "-c", "100", uri], ab_parse),
            "ab -k (keep-alive)": native(["ab", "-k", "-t", "5", "-n", "10000000", "-c", "100", uri], ab_parse),
            "wrk (keep-alive)": native(["wrk", "-t", "2", "-c", "100", "-d", "5s", uri], wrk_parse),
        }

    def our(binary):
        ph = ours("native-http", uri, ["http.duration=5s"], ("close", "keepalive"), "requests_per_s", binary)
        return {"ab (new connection)": ph["close"], "ab -k (keep-alive)": ph["keepalive"], "wrk (keep-alive)": ph["keepalive"]}
    rounds(["ab (new connection)", "ab -k (keep-alive)", "wrk (keep-alive)"], nat, our)
    stop("nginx")


def pair_sysbench():
    print("== sysbench oltp_read_only / oltp_write_only --threads=8 --time=10 --rand-type=uniform vs storebench oltp (same server, same 3 x 10000-row tables)", flush=True)

    def parse(out):
        m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
        return float(m.group(2)), int(m.group(1))

    for srv, drv in (("mariadb", "mysql"), ("postgres", "pgsql")):
        uri = start(srv, "--durability", "async")
        u = urllib.parse.urlparse(uri)
        # The generated password goes to sysbench by argument, never to the
        # screen or a file.
        args = [f"--db-driver={drv}", f"--{drv}-host={u.hostname}", f"--{drv}-port={u.port}", f"--{drv}-user={u.username}",
                f"--{drv}-password={urllib.parse.unquote(u.password or '')}", f"--{drv}-db={u.path.strip('/')}",
                "--tables=3", "--table-size=10000", "--threads=8", "--time=10", "--rand-type=uniform"]
        # storebench prepares sysbench's schema once; every read_only round
        # runs before any write_only round, since storebench checks each
        # point select's c against its id and sysbench's writes are random.
        ours("native-sysbench", uri, ["oltp.phases=prepare"], (), "tps")
        for phase in ("read_only", "write_only"):
            k = f"sysbench {phase} {srv}"
            rounds([k],
                   lambda: {k: native(["sysbench", f"oltp_{phase}", *args, "run"], parse)},
                   lambda binary: {k: ours("native-sysbench", uri, [f"oltp.phases={phase}"], (phase,), "tps", binary)[phase]})
        stop(srv)


def pair_memcached():
    print("== memcached: memcaslap -T 2 -c 50 -X 100 -x 200000 (gets and sets 9:1) vs storebench setget SETs then GETs, combined 9:1", flush=True)
    uri = start("memcached")
    u = urllib.parse.urlparse(uri)
    name = "memcached 9:1 get/set"

    def parse(out):
        m = re.search(r"Run time: [\d.]+s Ops: (\d+) TPS: (\d+)", out)
        return float(m.group(2)), int(m.group(1))

    def our(binary):
        ph = ours("native-memcached", uri, [], ("set", "get"), "requests_per_s", binary)
        (sr, sc, sn), (gr, gc, gn) = ph["set"], ph["get"]
        # memaslap's TPS over its 9:1 mix: the time 180000 GETs and 20000
        # SETs take at the rates measured, and the CPU they cost.
        rate = 200000 / (180000 / gr + 20000 / sr)
        return {name: (rate, 180000 * gc / gn + 20000 * sc / sn, 200000)}
    rounds([name], lambda: {name: native(["memcaslap", "-s", f"{u.hostname}:{u.port}", "-T", "2", "-c", "50", "-X", "100", "-x", "200000"], parse)}, our)
    stop("memcached")


def report():
    print()
    print(f"{'pair':<30} {'native/s median (min-max)':>28} {'storebench/s median (min-max)':>30} {'ratio median (min-max)':>24} {'CPU us/op native':>17} {'storebench':>11}")
    for name, nat, our, _ in rows:
        ratios = [o[0] / n[0] for n, o in zip(nat, our)]
        cpu_n = med([n[1] / n[2] * 1e6 for n in nat if n[2]])
        cpu_o = med([o[1] / o[2] * 1e6 for o in our if o[2]])
        nr, orr = [n[0] for n in nat], [o[0] for o in our]
        print(f"{name:<30} {med(nr):>10.0f} ({min(nr):.0f}-{max(nr):.0f}){'':>3} {med(orr):>12.0f} ({min(orr):.0f}-{max(orr):.0f}){'':>3} "
              f"{med(ratios):>8.3f} ({min(ratios):.3f}-{max(ratios):.3f}) {cpu_n:>17.1f} {cpu_o:>11.1f}")
    if BASE:
        report_base()
    if os.environ.get("BENCH_JSON"):
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump([{"pair": n, "native": a, "storebench": b, **({"base": c} if BASE else {})} for n, a, b, c in rows], f, indent=1)


def report_base():
    """BASE's figures from the same rounds: its ratio to the same native
    runs, its client CPU per operation, and BIN over BASE round by round."""
    print()
    print(f"BIN {BIN} against BASE {BASE}, in the same rounds:")
    print(f"{'pair':<30} {'ratio BIN':>22} {'ratio BASE':>22} {'BIN/BASE rate':>22} {'CPU us/op BIN':>14} {'BASE':>6} {'BIN/BASE':>9}")
    for name, nat, our, base in rows:
        if not base:
            continue
        ro = [o[0] / n[0] for n, o in zip(nat, our)]
        rb = [b[0] / n[0] for n, b in zip(nat, base)]
        rr = [o[0] / b[0] for o, b in zip(our, base)]
        co = [o[1] / o[2] * 1e6 for o in our if o[2]]
        cb = [b[1] / b[2] * 1e6 for b in base if b[2]]
        cr = [(o[1] / o[2]) / (b[1] / b[2]) for o, b in zip(our, base) if o[2] and b[2] and b[1]]

        def rng(xs):
            return f"{med(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"
        print(f"{name:<30} {rng(ro):>22} {rng(rb):>22} {rng(rr):>22} {med(co):>14.2f} {med(cb):>6.2f} {med(cr) if cr else float('nan'):>9.3f}")


def main():
    fns = {"redis": pair_redis, "pgbench": pair_pgbench, "http": pair_http, "sysbench": pair_sysbench, "memcached": pair_memcached}
    run_pairs("bench-native", PAIRS, fns, report)


if __name__ == "__main__":
    main()
