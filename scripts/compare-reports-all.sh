#!/usr/bin/env bash
# Runs every built-in study, cut small, with two storebench binaries
# (scripts/compare-reports.sh for each) and says which reports kept their
# shape. A restructuring that must leave every report unchanged (issue
# 37) is checked with it:
#   scripts/compare-reports-all.sh /tmp/sb-before /tmp/sb-after /tmp/cmp
# ONLY=name,name runs those studies alone. Each study's flags below keep
# its workloads, phases and at least one target of each kind it names
# (an embedded engine, a server per layout), at sizes that end in
# seconds to a minute; managed servers start as a run needs them.
# Exit status: 0 every shape the same, 1 one or more differ or failed, 2
# usage.
set -u
[ $# -eq 3 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
before=$1 after=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

# name | study and flags
studies=(
  "ycsb|ycsb --targets pebble,sqlite,redis,postgres --ladder 2000 --set ycsb.operations=2000"
  "oltp|oltp --targets sqlite,postgres,mariadb --ladder 1000 --set oltp.duration=2s --set oltp.report_interval=1s"
  "documents|documents --targets sqlite,postgres,ferretdb --ladder 2000 --set documents.operations=2000 --set documents.duration=1s"
  "geo|geo --targets pebble,redis,postgres --ladder 50 --set geo.ingest.duration=3s --set geo.gc.every=1s --set geo.timeline.queries=20 --set geo.correlate.users=4"
  "ledger|ledger --targets pebble,sqlite,redis --ladder 10,100 --set ledger.stress.duration=2s --set ledger.balance.addresses=1000 --set ledger.balance.reads=100 --set ledger.selects=100"
  "tokens|tokens --targets goleveldb,mpt --ladder 2e4 --set tokens.runtx.blocks=2 --set tokens.runtx.block_size=1000"
  "ads-rw|ads-rw --targets goleveldb,mpt --ladder 2e4 --set ads-rw.block_size=1000 --set ads-rw.reads=1000 --set ads-rw.readers=4"
  "tripcache|tripcache --targets pebble,redis --set tripcache.duration=2s --set tripcache.grace=1s"
  "http|http --targets nginx --set http.requests=200"
  "web-oltp|web-oltp --set http.requests=200 --set oltp.duration=2s --set oltp.report_interval=1s --set documents.operations=1000 --set documents.duration=1s --ladder 1000"
  "durability|durability --targets pebble --set durability.trials=1 --set durability.after_ops=100"
  "sweeps|sweeps --targets pebble --ladder 1000 --set ledger.stress.duration=2s --set ycsb.operations=2000"
  "native-redis|native-redis --set setget.requests=5000"
  "native-memcached|native-memcached --set setget.requests=5000"
  "native-pgbench|native-pgbench --set pointselect.duration=2s"
  "native-sysbench|native-sysbench --ladder 1000 --set oltp.duration=2s"
  "native-http|native-http --set http.requests=500"
)

fail=0
for s in "${studies[@]}"; do
  name=${s%%|*}
  args=${s#*|}
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then
    continue
  fi
  # shellcheck disable=SC2086 # the flags are words
  if ! "$here/compare-reports.sh" "$before" "$after" "$out" "$name" $args >"$out/$name.compare.txt" 2>&1; then
    fail=1
  fi
  tail -1 "$out/$name.compare.txt"
done
exit $fail
