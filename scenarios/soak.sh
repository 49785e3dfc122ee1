#!/usr/bin/env bash
# soak.sh — run every scenario of the catalogue N times, P at a time, and
# report how often each produced its expected verdict. It is `harness
# matrix --scenarios all --repeat N`, split into P shards that run at once
# (runs in parallel load the machine more than CI does, which is the point
# of a soak) and merged:
#
#   scenarios/soak.sh [N=20] [P=3] [OUT=/tmp/soak] [NAME…]
#
# The merged matrix is OUT/store/soak/ (matrix.json, summary.md, junit.xml,
# heatmap.png); each run is in OUT/store/matrix.scenario.NAME.run-I/.
# Re-running the same command resumes. Exit code: harness matrix's.
set -euo pipefail
N=${1:-20}
P=${2:-3}
OUT=${3:-/tmp/soak}
shift $(( $# < 3 ? $# : 3 ))
cd "$(dirname "$0")/.."
mkdir -p "$OUT/bin"
go build -o "$OUT/bin/harness" ./cmd/harness
if [ $# -gt 0 ]; then names=$(IFS=,; echo "$*"); else names=all; fi
pids=()
for i in $(seq 1 "$P"); do
  "$OUT/bin/harness" matrix --name soak --scenarios "$names" --repeat "$N" --shard "$i/$P" \
    --store "$OUT/shard-$i" > "$OUT/shard-$i.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
shards=()
for i in $(seq 1 "$P"); do shards+=("$OUT/shard-$i"); done
"$OUT/bin/harness" matrix merge --name soak --store "$OUT/store" "${shards[@]}"
