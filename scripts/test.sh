#!/usr/bin/env bash
# Install everything the tests need, then run the default (fast) test suite.
# Extra arguments go to pytest: `bash scripts/test.sh -m long` for the long end-to-end tests CI adds,
# `bash scripts/test.sh -m slow` for the slow CrossNER runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
ruff check .
if [ $# -eq 0 ]; then set -- -m "not slow and not long"; fi
python -m pytest "$@"
