#!/usr/bin/env bash
# CrossNER studies (issue 42's five-domain rerun, issue 46's ablation) on a lent GPU machine, time-boxed so that what
# finished comes back: lanes of domains run side by side, each study with `--parallel N` cells at once on the one card,
# none starting a cell that would end past DEADLINE_S (--time-limit), all stopped there; then every study's JSON is
# written from its finished cells (`--status`) and packed with the lanes' logs and an nvidia-smi trace into
# $OUT/studies.tgz (extract it in the checkout: docs/results/...).
# Run the same call again (or the same crossner_study.py command anywhere) and each study continues from its JSON:
# finished cells are never run twice.
#
# Here: bash scripts/device_bundle.sh, commit, then
#   run(command="source scripts/device_env.sh && NERSELECT_COMMIT=<HEAD> bash scripts/device_study.sh", carry=[".device"])
# Settings (environment): LANES="literature,politics music,science" (space between lanes, commas within one),
# ROWS, SEEDS, PARALLEL (cells at once per lane), DEADLINE_S (seconds from the start until the studies are stopped),
# PRESET, and arguments for every study after the script's name (e.g. the ablation's --grid KEY=V1,V2, repeatable).
# Or PLAN=FILE: one lane per line, "DOMAINS ROWS [STUDY ARGUMENTS]" (# starts a comment), so one call can run lanes
# with different rows and recipes (scripts/plans/*.plan). Lanes of one call must not share a domain: they would
# import its corpora into one workspace at once.
# A CPU smoke of the plumbing: PRESET=tiny SEEDS=1 ROWS=none,tapt LANES=music DEADLINE_S=300 OUT=/tmp/o \
#   PY=.venv/bin/python bash scripts/device_study.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:?set OUT to a folder for the results}
export ROWS=${ROWS:-none,tapt,dapt,cosine,dsir,ner,random} SEEDS=${SEEDS:-1,2,3} PARALLEL=${PARALLEL:-8}
export DEADLINE_S=${DEADLINE_S:-480} PRESET=${PRESET:-study} PY=${PY:-python3}
LANES=${LANES:-"literature,politics music,science"}
export START
START=$(date +%s)
mkdir -p "$OUT/logs"
plan=()  # one entry per lane: "DOMAINS ROWS ARGS..."
if [ -n "${PLAN:-}" ]; then
    [ -f "$PLAN" ] || { echo "device_study: no plan file $PLAN" >&2; exit 2; }
    [ $# -eq 0 ] || { echo "device_study: with PLAN=, a plan line carries each study's arguments; '$*' would be dropped" >&2; exit 2; }
    while read -r line; do
        line=${line%%#*}
        [ -n "${line// /}" ] || continue
        [ "$(wc -w <<< "$line")" -ge 2 ] || { echo "device_study: $PLAN: '$line': expected DOMAINS ROWS [ARGS]" >&2; exit 2; }
        plan+=("$line")
    done < "$PLAN"
else
    for domains in $LANES; do plan+=("$domains $ROWS $*"); done
fi
seen=""
for lane in "${plan[@]}"; do
    for d in $(cut -d' ' -f1 <<< "$lane" | tr ',' ' '); do
        case " $seen " in *" $d "*) echo "device_study: domain $d is in two lanes: put its steps in one" >&2; exit 2;; esac
    done
    seen="$seen $(cut -d' ' -f1 <<< "$lane" | tr ',' ' ')"
done
study() { "$PY" scripts/crossner_study.py --domain "$1" --rows "$2" --seeds "$SEEDS" --preset "$PRESET" "${@:3}"; }
export -f study
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 > "$OUT/logs/nvidia-smi.csv" 2>&1 &
    smi=$!
fi
k=0
lanes=()
for lane in "${plan[@]}"; do
    k=$((k + 1))
    # shellcheck disable=SC2086  # a lane's words: domains, rows, then the study's arguments
    set -- $lane
    # each lane in its own process group, so the deadline stops a study together with its cell workers
    setsid bash -c '
        for d in ${1//,/ }; do
            left=$(( DEADLINE_S - ($(date +%s) - START) ))
            [ "$left" -gt 60 ] || { echo "[lane] $d not started: ${left}s left"; continue; }
            echo "[lane] $d: ${left}s left"
            # --time-limit: no cell starts that would end past the deadline (timed by the finished cells of its row), so
            # the lane ends between cells; timeout stays as the backstop for an estimate that was too short
            timeout -s INT -k 20 "$left" bash -c "study \"\$@\"" study "$d" "$2" --parallel "$PARALLEL" \
                --time-limit "$left" "${@:3}"
            echo "[lane] $d ended with $? after $(( $(date +%s) - START ))s"
        done' lane "$@" > "$OUT/logs/lane-$k.log" 2>&1 &
    lanes+=($!)
done
for pid in "${lanes[@]}"; do wait "$pid"; done
[ -n "${smi:-}" ] && kill "$smi" 2>/dev/null
for lane in "${plan[@]}"; do
    # shellcheck disable=SC2086
    set -- $lane
    for d in ${1//,/ }; do
        study "$d" "$2" "${@:3}" --status > /dev/null 2>>"$OUT/logs/status.log" || echo "no --status for $d" >> "$OUT/logs/status.log"
    done
done
# every v2 study JSON written since the start (a variant's too), with the logs: one file back, whatever the count
find docs/results -name 'crossner-v2-*.json' -newermt "@$START" > "$OUT/logs/written.txt"
tar czf "$OUT/studies.tgz" -T "$OUT/logs/written.txt" -C "$OUT" logs
echo "device_study: $(( $(date +%s) - START ))s; in $OUT/studies.tgz:"; tar tzf "$OUT/studies.tgz"
