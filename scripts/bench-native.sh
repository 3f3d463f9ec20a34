#!/usr/bin/env bash
# storebench side by side with the native load tools (redis-benchmark,
# pgbench, ab, wrk, sysbench, memcaslap) on the same servers: see bench_native.py.
# ROUNDS=5 PAIRS=redis,pgbench,http,sysbench,memcached PLACEMENT=shared,separated BENCH_JSON=file
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/bench_native.py
