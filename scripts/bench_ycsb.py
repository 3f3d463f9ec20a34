#!/usr/bin/env python3
"""storebench's YCSB side by side with go-ycsb (make bench-ycsb).

Both drive the same server instance (Redis, PostgreSQL: started through
storebench) with the same record shape (RECORDS records of 10 fields of
100 bytes), YCSB core workloads A and C with uniform requests, OPS
operations, at each thread count of THREADS (go-ycsb threadcount,
storebench concurrency). Each side loads its own table (go-ycsb's is
named goycsb, storebench's usertable) and the two run alternately over
ROUNDS rounds (go-ycsb first in odd rounds, storebench first in even
ones, so a slow drift of the machine falls on both sides).

Per pair it prints the median throughput of each side with its min-max,
the median of the per-round ratios storebench/go-ycsb with their min-max
(goal: >= 1.5 where the server is not the limit), and each side's client
CPU time per operation over its run phase (goal: storebench <= half of
go-ycsb's): getrusage(RUSAGE_CHILDREN) around `go-ycsb run` (its whole
process: start-up and connections included), and the storebench worker's
own CPU over the step's timed window (results.json: resources.timed).
storebench verifies every read; go-ycsb verifies none. The client
storebench ran (event_loops: 0 is a goroutine per connection) is printed.
So is the server's own CPU per operation over each side's runs (its
process and every process under it, live or exited: PostgreSQL's
backends), and the
share of the machine's cores it held over them: a side whose server
holds most of a core (Redis) or of the machine is server-bound, and its
throughput ratio says little of the client.

Environment: BIN (default bin/storebench), BASE (a second storebench
binary run in the same rounds: see benchpair.py), GO_YCSB (default
~/.cache/storebench/go-ycsb-v1.0.1/go-ycsb, built by
scripts/install-go-ycsb.sh), ROUNDS (5), PAIRS (redis,postgres), WORKLOADS
(a,c), THREADS (1,8), OPS (200000), RECORDS (10000), BENCH_JSON (a file
to write every raw figure to), SB_SETS (extra --set for storebench, e.g.
ycsb.client=goroutines).
"""
import glob
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.parse

from benchpair import BASE, BIN, client, knows, med, proc_cpu, redis_cli, rotated, run_args, run_pairs, sb, server_pid, sides, start, stop, suffix

GO_YCSB = os.environ.get("GO_YCSB", os.path.expanduser("~/.cache/storebench/go-ycsb-v1.0.1/go-ycsb"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
PAIRS = [p for p in os.environ.get("PAIRS", "redis,postgres").split(",") if p]
WORKLOADS = [w for w in os.environ.get("WORKLOADS", "a,c").split(",") if w]
THREADS = [int(t) for t in os.environ.get("THREADS", "1,8").split(",") if t]
OPS = int(float(os.environ.get("OPS", "200000")))
RECORDS = int(float(os.environ.get("RECORDS", "10000")))
SB_SETS = [s for s in os.environ.get("SB_SETS", "").split(" ") if s]
OUT = tempfile.mkdtemp(prefix="bench-ycsb-")
MIX = {"a": {"readproportion": "0.5", "updateproportion": "0.5"}, "c": {"readproportion": "1", "updateproportion": "0"}}
rows = []  # (pair, go-ycsb [(rate, cpu_s, ops)], storebench [(rate, cpu_s, ops, loops)], BASE's [...] (empty without BASE))
servers = []  # (server and threads, go-ycsb's runs [(server CPU s, ops, wall s)], storebench's)


def db_props(server, uri):
    u = urllib.parse.urlparse(uri)
    pw = urllib.parse.unquote(u.password or "")
    if server == "redis":
        db = u.path.strip("/") or "0"
        return ["-p", f"redis.addr={u.hostname}:{u.port}", "-p", f"redis.password={pw}", "-p", f"redis.db={db}"]
    return ["-p", f"pg.host={u.hostname}", "-p", f"pg.port={u.port}", "-p", f"pg.user={u.username}",
            "-p", f"pg.password={pw}", "-p", f"pg.db={u.path.strip('/')}", "-p", "pg.sslmode=disable"]


def goycsb(cmd, binding, props, threads, ops, mix):
    """Runs go-ycsb load or run; returns (rate/s, client CPU seconds, ops)."""
    args = [GO_YCSB, cmd, binding, "-p", "workload=core", "-p", "table=goycsb", "-p", f"recordcount={RECORDS}",
            "-p", f"operationcount={ops}", "-p", f"threadcount={threads}", "-p", "fieldcount=10", "-p", "fieldlength=100",
            "-p", "requestdistribution=uniform", "-p", "readallfields=true", "-p", "writeallfields=false",
            "-p", "scanproportion=0", "-p", "insertproportion=0", "-p", "readmodifywriteproportion=0", *props]
    for k, v in mix.items():
        args += ["-p", f"{k}={v}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([*client(), *args], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = re.search(r"^Run finished, takes (\S+)", p.stdout, re.M)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"go-ycsb {cmd} {binding} (exit {p.returncode}): {quiet(p.stderr or p.stdout)[-400:]}")
    if re.search(r"_ERROR\s+-", p.stdout):
        raise RuntimeError(f"go-ycsb {cmd} {binding} counted errors: {quiet(p.stdout)[-600:]}")
    return ops / duration(m.group(1)), cpu, ops


def quiet(out):
    """go-ycsb's output without the properties it echoes (the generated
    password among them): secrets never reach the screen or a file."""
    return "\n".join(l for l in out.strip().splitlines() if "password" not in l.lower() and not l.startswith('"'))


def duration(s):
    """A Go time.Duration's String() in seconds."""
    total = 0.0
    for num, unit in re.findall(r"([\d.]+)(h|ms|µs|us|ns|m|s)", s):
        total += float(num) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}[unit]
    return total


_run = [0]


def ours(uri, threads, workloads, binary=BIN):
    """Runs storebench's ycsb with binary; returns {workload: (rate/s, worker CPU seconds, ops, event loops)}."""
    _run[0] += 1
    d = os.path.join(OUT, f"ycsb-{_run[0]}")
    # go-ycsb's own records sit on the same server (its table goycsb, or
    # its keys on Redis): storebench runs beside them, under its own names.
    args = run_args(binary, ["run", "ycsb", "--targets", uri, "--out", d, "--quiet", "--ladder", str(RECORDS), "--concurrency", str(threads),
                             "--set", f"ycsb.workloads=[{','.join(workloads)}]", "--set", f"ycsb.operations={OPS}", "--set", "ycsb.distribution=uniform"], uri)
    for s in SB_SETS:
        args += ["--set", s]
    sb(*args, binary=binary)
    res = json.load(open(glob.glob(d + "/*/results.json")[0]))
    t = res["targets"][0]
    if t.get("status") != "ok":
        raise RuntimeError(f"storebench ycsb: {t.get('reason')}")
    out = {}
    for s in t["steps"]:
        if s["phase"] not in workloads:
            continue
        w = s["resources"]["timed"]
        cpu = (w["after"]["cpu_user_ns"] + w["after"]["cpu_sys_ns"] - w["before"]["cpu_user_ns"] - w["before"]["cpu_sys_ns"]) / 1e9
        if s.get("verify", {}).get("checked", 0) == 0:
            raise RuntimeError(f"storebench ycsb {s['phase']}: no read verified")
        out[s["phase"]] = (s["ops"] / s["seconds"], cpu, s["ops"], s["metrics"].get("event_loops", 0))
    return out


def pair(server, binding):
    print(f"== {server}: go-ycsb {binding} vs storebench ycsb, {RECORDS} records of 10 x 100 bytes, {OPS} uniform operations, workloads {','.join(WORKLOADS)}, threads {THREADS}", flush=True)
    uri = start(server, "--durability", "async")
    pid = server_pid(uri)
    props = db_props(server, uri)
    try:
        goycsb("load", binding, props, 8, RECORDS, {})
        for T in THREADS:
            # go-ycsb's fixed cost (start-up, connections): a run of one
            # operation, counted in its figure below as it is in each run.
            _, fixed, _ = goycsb("run", binding, props, T, T, MIX["c"])
            print(f"  threads {T}: a go-ycsb run of {T} operation(s) costs {fixed * 1e3:.0f} ms of CPU ({fixed / OPS * 1e6:.2f} us per operation of a run)", flush=True)
            nat, our, base = {}, {}, {}
            srv = {"go-ycsb": [], "storebench": [], "BASE": []}  # (server CPU seconds, operations, wall seconds) of each side's runs
            for r in range(ROUNDS):
                def run_native():
                    for w in WORKLOADS:
                        c0, t0 = proc_cpu(pid), time.monotonic()
                        nat.setdefault(w, []).append(goycsb("run", binding, props, T, OPS, MIX[w]))
                        srv["go-ycsb"].append((proc_cpu(pid) - c0, OPS, time.monotonic() - t0))

                def run_ours(binary, into, side):
                    c0, t0 = proc_cpu(pid), time.monotonic()
                    figs = ours(uri, T, WORKLOADS, binary)
                    for w, fig in figs.items():
                        into.setdefault(w, []).append(fig)
                    # storebench's run loads its own table first: its server
                    # CPU counts the load's operations too.
                    srv[side].append((proc_cpu(pid) - c0, len(figs) * OPS + RECORDS, time.monotonic() - t0))
                    if server == "redis" and not knows(binary, "--allow-nonempty"):
                        # A storebench older than its occupancy check emptied
                        # the whole Redis database for its fresh step
                        # (FLUSHDB; on PostgreSQL it truncated its own table
                        # only) and left its records behind: the database is
                        # emptied and go-ycsb's records go back before either
                        # side runs again.
                        redis_cli(uri, "FLUSHDB")
                        goycsb("load", binding, props, 8, RECORDS, {})
                runs = [run_native] + [(lambda b=b, i=i, sd=sd: run_ours(b, i, sd)) for b, i, sd in zip(sides(), (our, base), ("storebench", "BASE"))]
                for fn in rotated(runs, r):
                    fn()
                print(f"  threads {T} round {r + 1}/{ROUNDS}: " + "; ".join(
                    f"{w.upper()} {our[w][-1][0]:.0f}/{nat[w][-1][0]:.0f} ops/s, {our[w][-1][1] / our[w][-1][2] * 1e6:.1f}/{nat[w][-1][1] / nat[w][-1][2] * 1e6:.1f} us/op"
                    + (f" (BASE {base[w][-1][0]:.0f} ops/s, {base[w][-1][1] / base[w][-1][2] * 1e6:.1f} us/op)" if w in base else "")
                    for w in WORKLOADS), flush=True)
            for w in WORKLOADS:
                rows.append((f"{server} {w.upper()} threads {T}{suffix()}", nat[w], our[w], base.get(w, [])))
            servers.append((f"{server} threads {T}", srv["go-ycsb"], srv["storebench"], srv["BASE"]))
    finally:
        stop(server)


def rng(xs, f="{:.0f}"):
    return f"{f.format(med(xs))} ({f.format(min(xs))}-{f.format(max(xs))})"


def report():
    if not rows:
        return
    print()
    print("| pair | go-ycsb ops/s | storebench ops/s | ratio | CPU us/op go-ycsb | storebench | CPU ratio | loops |")
    print("|---|---|---|---|---|---|---|---|")
    for name, nat, our, _ in rows:
        ratios = [o[0] / n[0] for n, o in zip(nat, our)]
        cn = [n[1] / n[2] * 1e6 for n in nat]
        co = [o[1] / o[2] * 1e6 for o in our]
        cr = [b / a for a, b in zip(cn, co)]
        print(f"| {name} | {rng([n[0] for n in nat])} | {rng([o[0] for o in our])} | {rng(ratios, '{:.2f}')} | "
              f"{rng(cn, '{:.1f}')} | {rng(co, '{:.1f}')} | {rng(cr, '{:.2f}')} | {our[0][3]:.0f} |")
    if servers:
        # Server-bound: the server's CPU over a side's runs is most of a
        # core (Redis serves from one thread) or most of the machine's
        # cores. The share is over each whole run (start-up, and
        # storebench's load phase, included): a floor for the run phase.
        cores = os.cpu_count() or 1
        print()
        print(f"The server's CPU per operation (us; storebench's runs count their load's operations too) and its share of the machine's {cores} cores over each side's runs:")
        print("| server, threads | go-ycsb: server us/op | share | storebench: server us/op | share |")
        print("|---|---|---|---|---|")
        for name, g, o, _ in servers:
            def per_op(xs):
                return rng([c / n * 1e6 for c, n, _ in xs], '{:.1f}')

            def share(xs):
                return f"{med([c / w for c, _, w in xs]) / cores:.0%}"
            print(f"| {name} | {per_op(g)} | {share(g)} | {per_op(o)} | {share(o)} |")
    if BASE:
        report_base()
    if os.environ.get("BENCH_JSON"):
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump([{"pair": n, "go_ycsb": a, "storebench": b, **({"base": c} if BASE else {})} for n, a, b, c in rows], f, indent=1)


def report_base():
    """BASE's figures from the same rounds: its ratio to the same go-ycsb
    runs, its client CPU per operation, and BIN over BASE round by round."""
    print()
    print(f"BIN {BIN} against BASE {BASE}, in the same rounds:")
    print("| pair | ratio BIN | ratio BASE | BIN/BASE ops/s | CPU us/op BIN | BASE | BIN/BASE CPU |")
    print("|---|---|---|---|---|---|---|")
    for name, nat, our, base in rows:
        if not base:
            continue
        co = [o[1] / o[2] * 1e6 for o in our]
        cb = [b[1] / b[2] * 1e6 for b in base]
        print(f"| {name} | {rng([o[0] / n[0] for n, o in zip(nat, our)], '{:.2f}')} | {rng([b[0] / n[0] for n, b in zip(nat, base)], '{:.2f}')} | "
              f"{rng([o[0] / b[0] for o, b in zip(our, base)], '{:.3f}')} | {rng(co, '{:.1f}')} | {rng(cb, '{:.1f}')} | "
              f"{rng([a / b for a, b in zip(co, cb)], '{:.3f}')} |")


def main():
    if not os.access(GO_YCSB, os.X_OK):
        sys.exit(f"bench-ycsb: no go-ycsb at {GO_YCSB} (scripts/install-go-ycsb.sh builds it)")
    fns = {"redis": lambda: pair("redis", "redis"), "postgres": lambda: pair("postgres", "postgresql")}
    run_pairs("bench-ycsb", PAIRS, fns, report)


if __name__ == "__main__":
    main()
