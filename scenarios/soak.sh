#!/usr/bin/env bash
# soak.sh — run every scenario of the catalogue N times, P at a time, and
# tabulate how often each produced its expected verdict and how long it took.
#
#   scenarios/soak.sh [N=20] [P=3] [OUT=/tmp/soak] [NAME…]
#
# Each run is `harness scenario run NAME --json`; its JSON row goes to
# OUT/rows/NAME.I.json. The summary (name, N/N as expected, median and max
# seconds) is printed and written to OUT/summary.txt. Runs in parallel load
# the machine more than CI does, which is the point of a soak.
set -euo pipefail
N=${1:-20}
P=${2:-3}
OUT=${3:-/tmp/soak}
shift $(( $# < 3 ? $# : 3 ))
cd "$(dirname "$0")/.."
mkdir -p "$OUT/rows" "$OUT/bin"
go build -o "$OUT/bin/harness" ./cmd/harness
if [ $# -gt 0 ]; then names=("$@"); else
  mapfile -t names < <("$OUT/bin/harness" scenario list --json | python3 -c 'import json,sys; [print(s["name"]) for s in json.load(sys.stdin)]')
fi
jobs=()
for i in $(seq 1 "$N"); do for n in "${names[@]}"; do jobs+=("$n $i"); done; done
printf '%s\n' "${jobs[@]}" | xargs -P "$P" -L 1 bash -c '
  name=$0; i=$1
  "'"$OUT"'/bin/harness" scenario run "$name" --json --store "'"$OUT"'/store" > "'"$OUT"'/rows/$name.$i.json" 2> "'"$OUT"'/rows/$name.$i.err" || true
  # keep the disk small: the report of a run that went as expected is not needed
  python3 - "'"$OUT"'/rows/$name.$i.json" <<PY
import json, shutil, sys
try:
    r = json.load(open(sys.argv[1]))[0]
except Exception:
    sys.exit(0)
if r.get("pass") and r.get("dir"):
    shutil.rmtree(r["dir"], ignore_errors=True)
PY
'
python3 - "$OUT" "${names[@]}" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
print(f"{'scenario':30} {'as expected':>11} {'median s':>9} {'max s':>6}  unexpected")
for n in names:
    ok, secs, bad = 0, [], []
    runs = sorted(f for f in os.listdir(out + "/rows") if f.startswith(n + ".") and f.endswith(".json"))
    for f in runs:
        try:
            r = json.load(open(os.path.join(out, "rows", f)))[0]
        except Exception:
            bad.append(f + ": no result"); continue
        secs.append(r["seconds"])
        if r["pass"]:
            ok += 1
        else:
            bad.append(f"{f}: {r.get('observed')} {r.get('error','')} {r.get('dir','')}")
    med = statistics.median(secs) if secs else 0
    mx = max(secs) if secs else 0
    print(f"{n:30} {ok:>5}/{len(runs):<5} {med:9.1f} {mx:6.1f}  {'; '.join(bad)}")
PY
