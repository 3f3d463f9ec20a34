#!/usr/bin/env bash
# make bench-cost: does the cost model predict a machine it did not see?
# A real run of YCSB C and A on TARGETS (default rocksdb,redis) on the CPU
# shapes SHAPES (default 0.25 0.5 1); the projection's held-out check
# predicts the shape with the most vCPUs from the others. The bound holds
# on each target's mix (its steps' throughput weighed as the sizing weighs
# them: what its cost rests on, as the plan's held-out error); each step's
# own error is printed beside it. The default
# stops at 1 vCPU: on a 2-core machine a shape of 2 vCPUs shares its
# cores with the load generator (docs/machines.md), a regime the smaller
# shapes do not measure; on a bigger machine give SHAPES="0.5 1 2". Prints each target's predicted and measured
# throughput and p99 with the errors, and fails when one is above BOUND
# (default 0.25, the bound above which a cost is marked rough): the bound
# lives here, in a benchmark, not in a timed test (docs/cost.md).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${TARGETS:-rocksdb,redis}
BOUND=${BOUND:-0.25}
SHAPES=${SHAPES:-0.25 0.5 1}
machines=()
for s in $SHAPES; do machines+=(--machine "cpus=$s"); done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin/storebench run ycsb --targets "$TARGETS" --set 'ycsb.workloads=[c,a]' --set ycsb.operations=300000 \
  "${machines[@]}" --quiet --out "$out" >/dev/null
run=$(ls -d "$out"/*/)
python3 - "$run/results.json" "$BOUND" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); bound = float(sys.argv[2])
print(f"{'target':10} {'step':12} {'shape':8} {'ops/s predicted':>16} {'measured':>10} {'error':>7} {'p99 predicted':>14} {'measured':>10} {'error':>7}")
worst_mix, worst_step = 0, 0
for p in r["projection"]["plans"]:
    share = {m["kind"]: m["share"] for m in p["mix"]}
    pred = meas = 0
    for h in p.get("held_out", []):
        eo = (h["predicted_ops_per_s"] - h["measured_ops_per_s"]) / h["measured_ops_per_s"]
        ep = (h["predicted_p99_s"] - h["measured_p99_s"]) / h["measured_p99_s"] if h["measured_p99_s"] else 0
        worst_step = max(worst_step, abs(eo))
        pred += share.get(h["kind"], 0) / h["predicted_ops_per_s"]
        meas += share.get(h["kind"], 0) / h["measured_ops_per_s"]
        print(f"{p['target']:10} {h['kind']:12} {h['machine']:8} {h['predicted_ops_per_s']:16.0f} {h['measured_ops_per_s']:10.0f} {eo:+7.0%} {h['predicted_p99_s']*1e6:12.0f}µs {h['measured_p99_s']*1e6:8.0f}µs {ep:+7.0%}")
    if pred:
        e = meas / pred - 1
        worst_mix = max(worst_mix, abs(e))
        print(f"{p['target']:10} {'the mix':12} {'':8} {1/pred:16.0f} {1/meas:10.0f} {e:+7.0%}   (what the cost rests on; the plan says {p.get('held_out_error', 0):.0%})")
print(f"worst step error {worst_step:.0%}; worst mix error {worst_mix:.0%} (bound {bound:.0%}, on the mix: what a cost rests on, docs/cost.md)")
sys.exit(1 if worst_mix > bound else 0)
PY
