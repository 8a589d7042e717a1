#!/usr/bin/env bash
# Create .venv and install the pinned runtime (and, with --test, the test extras and Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  # The environment takes about 3 GB (torch, transformers, umap, ray): say so before pip fails half-way with
  # "No space left on device" (a CI run once did, on a disk that earlier checks had filled).
  FREE_KB=$(df -Pk . | awk 'NR==2 {print $4}')
  if [ -n "$FREE_KB" ] && [ "$FREE_KB" -lt 3500000 ]; then
    echo "setup: only $((FREE_KB / 1000)) MB free on $(df -P . | awk 'NR==2 {print $6}'); .venv needs about 3 GB." \
         "Free some space if the install stops with 'No space left on device'" \
         "(python -m core runs disk shows what a workspace holds)." >&2
  fi
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# torch first and exactly: on these machines 2.13.0 resolves to the local CPU wheel;
# a looser pin would pull several GB of CUDA packages.
python -m pip install -q torch==2.13.0
python -m pip install -q -r requirements.txt
if [ "${1:-}" = "--test" ]; then
  python -m pip install -q -r requirements-test.txt
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    # Wait (up to 10 minutes) for another apt/dpkg run to release its lock instead of failing with 100.
    APT_WAIT=(-o DPkg::Lock::Timeout=600)
    $SUDO apt-get "${APT_WAIT[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${APT_WAIT[@]}" install -y -qq chromium chromium-driver >/dev/null
  fi
fi
# Compile UMAP's numba code once into .venv/numba-cache (scripts/app.sh points NUMBA_CACHE_DIR there),
# so the first map does not spend a minute compiling in its job process. Skipped when already done.
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
if [ ! -e "$NUMBA_CACHE_DIR/.warm" ]; then
  echo "Compiling UMAP once (about a minute on 2 cores)..."
  if python -c "from core.selection.projection import warm_up; warm_up()"; then
    mkdir -p "$NUMBA_CACHE_DIR" && touch "$NUMBA_CACHE_DIR/.warm"
  else
    echo "UMAP warm-up failed; the first map will compile it instead" >&2
  fi
fi
