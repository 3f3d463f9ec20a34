#!/usr/bin/env bash
# Runs one study with two storebench binaries, one after the other, with
# the same flags, and compares the shapes of their report.md
# (scripts/report_shape.py: headings, table headers, row labels, n/a
# reasons and failures; measured figures and the machine-state bottleneck
# column left out, as they vary from run to run). A restructuring that
# must leave every report unchanged is checked with it, e.g.:
#   scripts/compare-reports.sh /tmp/sb-before /tmp/sb-after /tmp/cmp ycsb \
#     ycsb --targets sqlite,postgres --ladder 2000 --set ycsb.operations=2000
# Exit status: 0 same shape, 1 different (the diff is printed), 2 usage.
set -u
[ $# -ge 5 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
before=$1 after=$2 out=$3 name=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
base=$out/$name
rm -rf "$base" && mkdir -p "$base"
for v in before after; do
  bin=$before
  [ $v = after ] && bin=$after
  "$bin" run "$@" --out "$base/$v" --quiet >"$base/$v.log" 2>&1
  echo "$name $v: exit $?"
  r=$(ls -d "$base/$v"/*/ 2>/dev/null | head -1)
  [ -n "$r" ] && [ -f "$r/report.md" ] || { echo "$name $v: no report (see $base/$v.log)"; exit 1; }
  python3 "$here/report_shape.py" "$r/report.md" >"$base/$v.shape"
done
if diff "$base/before.shape" "$base/after.shape"; then
  echo "$name: same shape ($(wc -l <"$base/after.shape") lines)"
else
  echo "$name: the shapes differ"
  exit 1
fi
