#!/usr/bin/env bash
# Shows that the harness's memory stays flat as data grows: runs the ledger
# insert+select on one target at two sizes and prints the coordinator's peak
# RSS (sampled from /proc) and the worker's RSS after each step (from
# results.json). Usage: scripts/bench-memory.sh [target] [small] [large]
set -euo pipefail
bin=${BIN:-bin/storebench}
target=${1:-pebble}; small=${2:-1e4}; large=${3:-1e6}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ladder in "$small" "$small,$large"; do
  "$bin" run ledger --targets "$target" --ladder "$ladder" --durability async \
    --set ledger.chains.samples=0 --set ledger.stress.duration=1s --set ledger.balance.addresses=0 \
    --out "$out/$ladder" --quiet >/dev/null 2>&1 &
  pid=$!; peak=0
  while kill -0 $pid 2>/dev/null; do
    r=$(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || true)
    [ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.1
  done
  wait $pid
  echo "ladder $ladder: coordinator peak RSS $((peak/1024)) MiB"
done
python3 - "$out/$small,$large" <<'PY'
import json, glob, sys
r = json.load(open(glob.glob(sys.argv[1] + '/*/results.json')[0]))
for s in r['targets'][0]['steps']:
    res = s['resources']
    print('  worker after %-6s N=%-8d RSS %6.1f MiB   disk %7.1f MiB' % (s['phase'], s['n'], res['after']['rss_bytes']/2**20, res['disk_allocated_bytes']/2**20))
PY
