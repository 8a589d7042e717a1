#!/usr/bin/env bash
# Install the pinned runtime into .venv and start the app on the demo workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec streamlit run app.py "$@"
