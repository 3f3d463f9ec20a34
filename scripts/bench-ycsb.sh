#!/usr/bin/env bash
# storebench's ycsb side by side with go-ycsb v1.0.1 on the same Redis and
# PostgreSQL: see bench_ycsb.py.
# ROUNDS=5 PAIRS=redis,postgres WORKLOADS=a,c THREADS=1,8 OPS=200000 PLACEMENT=shared,separated BENCH_JSON=file
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-go-ycsb.sh
exec nice -n "${NICE:-0}" python3 scripts/bench_ycsb.py
