#!/usr/bin/env bash
# Create .venv and install the pinned runtime (and, with --test, the test extras and Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
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
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
fi
