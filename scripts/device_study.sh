#!/usr/bin/env bash
# The CrossNER study (issue 42's five-domain rerun) on a lent GPU machine, time-boxed so that what finished comes
# back: two lanes of domains run side by side, each study with `--parallel N` cells at once on the one card, all of
# them stopped at DEADLINE_S; then every domain's JSON is written from its finished cells (`--status`) into $OUT with
# the lanes' logs and an nvidia-smi trace. Run the same call again (or the same crossner_study.py command anywhere)
# and each study continues from its JSON: finished cells are never run twice.
#
# Here: bash scripts/device_bundle.sh, commit, then
#   run(command="source scripts/device_env.sh && NERSELECT_COMMIT=<HEAD> bash scripts/device_study.sh", carry=[".device"])
# Settings (environment): LANES="literature,politics music,science" (space between lanes, commas within one),
# ROWS, SEEDS, PARALLEL (cells at once per lane), DEADLINE_S (seconds from the start until the studies are stopped),
# PRESET. A CPU smoke of the plumbing: PRESET=tiny SEEDS=1 ROWS=none,tapt LANES=music DEADLINE_S=300 OUT=/tmp/o bash ...
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to a folder for the results}
LANES=${LANES:-"literature,politics music,science"}
ROWS=${ROWS:-none,tapt,dapt,cosine,dsir,ner,random}
SEEDS=${SEEDS:-1,2,3}
PARALLEL=${PARALLEL:-8}
DEADLINE_S=${DEADLINE_S:-480}
PRESET=${PRESET:-study}
PY=${PY:-python3}
mkdir -p "$OUT"
start=$(date +%s)
study() { "$PY" scripts/crossner_study.py --domain "$1" --rows "$ROWS" --seeds "$SEEDS" --preset "$PRESET" "${@:2}"; }
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 > "$OUT/nvidia-smi.csv" 2>&1 &
    smi=$!
fi
lane=0
lanes=()
for domains in $LANES; do
    lane=$((lane + 1))
    # each lane in its own process group, so the deadline stops a study together with its cell workers
    setsid bash -c '
        for d in ${1//,/ }; do
            left=$(( $2 - ($(date +%s) - $3) ))
            [ "$left" -gt 60 ] || { echo "[lane] $d not started: ${left}s left"; continue; }
            echo "[lane] $d: ${left}s left"
            timeout -s INT -k 20 "$left" "$4" scripts/crossner_study.py --domain "$d" --rows "$5" --seeds "$6" \
                --preset "$7" --parallel "$8"
            echo "[lane] $d ended with $?"
        done' lane "$domains" "$DEADLINE_S" "$start" "$PY" "$ROWS" "$SEEDS" "$PRESET" "$PARALLEL" \
        > "$OUT/lane-$lane.log" 2>&1 &
    lanes+=($!)
done
for pid in "${lanes[@]}"; do wait "$pid"; done
[ -n "${smi:-}" ] && kill "$smi" 2>/dev/null
for domains in $LANES; do
    for d in ${domains//,/ }; do
        study "$d" --status > /dev/null 2>>"$OUT/status.log" || echo "no --status for $d" >> "$OUT/status.log"
        cp docs/results/crossner-v2-"$d"-"$PRESET"*.json "$OUT/" 2>/dev/null
    done
done
echo "device_study: $(( $(date +%s) - start ))s; results in $OUT:"; ls "$OUT"
