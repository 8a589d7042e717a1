#!/usr/bin/env bash
# Install the pinned runtime into .venv and start the app on the demo workspace.
#
#   bash scripts/app.sh                       # http://127.0.0.1:8501, this machine only
#   NERSELECT_ADDRESS=0.0.0.0 bash scripts/app.sh   # listen on every interface: needs accounts (users add) or OIDC
#   NERSELECT_PORT=8600 bash scripts/app.sh   # another port
#   bash scripts/app.sh --dev                 # development: reload pages when files change
#
# Other arguments go to `streamlit run` (e.g. --server.address 0.0.0.0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# numba (UMAP) compiles once into this folder and reuses it in every job process.
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
args=()
for a in "$@"; do
  if [ "$a" = "--dev" ]; then
    args+=(--server.fileWatcherType auto --server.runOnSave true)
  else
    args+=("$a")
  fi
done
[ -n "${NERSELECT_ADDRESS:-}" ] && args=(--server.address "$NERSELECT_ADDRESS" "${args[@]}")
# Listening beyond this machine needs access control: accounts in the workspace or OIDC (see README, "Teams").
address=127.0.0.1
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --server.address) address="${args[$((i + 1))]:-}" ;;
    --server.address=*) address="${args[$i]#--server.address=}" ;;
  esac
done
python -m core serve-check "$address" >/dev/null || exit 1
# a proxy on this machine reaches a dual-stack bind (::) as ::ffff:127.0.0.1: trusted too, or every browser behind it
# counted as one address in sign-in's slow-down
export FORWARDED_ALLOW_IPS="${FORWARDED_ALLOW_IPS:-127.0.0.1,::1,::ffff:127.0.0.1}"
[ -n "${NERSELECT_PORT:-}" ] && args=(--server.port "$NERSELECT_PORT" "${args[@]}")
exec streamlit run server.py "${args[@]}"
