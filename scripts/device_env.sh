# Sourced at the start of a command on a GPU device machine (issue 25), after scripts/device_bundle.sh packed
# .device/ here and the call carried it: installs the carried wheels beside the image's own packages, puts the
# fp16 default encoder on the path, points the study scripts at the carried CrossNER copy, and keeps everything offline.
if [ ! -d .device/wheels ]; then
    echo "no .device/ here: run scripts/device_bundle.sh on the developer machine and carry .device" >&2
    return 1 2>/dev/null || exit 1
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device/wheels/*.whl \
    || { echo "installing the carried wheels failed" >&2; return 1 2>/dev/null || exit 1; }
export PYTHONPATH="/tmp/site:$PWD/.device/site${PYTHONPATH:+:$PYTHONPATH}"
export NERSELECT_CROSSNER="$PWD/.device/crossner" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
export NERSELECT_ENCODER_NOTE="default encoder weights rounded to float16 for the device carry (scripts/device_bundle.sh), loaded in float32: about 1e-3 relative from the CPU runs' weights"
# The image has python3 only. `python` is a wrapper that execs python3 by its own path, not a link: Python finds its
# virtual environment from the path it was started as, so a link in /tmp/bin lost the venv (issue 45: pyarrow missing).
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > /tmp/bin/python && chmod +x /tmp/bin/python
export PATH="/tmp/bin:$PATH"
python3 - <<'EOF'
import torch

import core.lm.models as m

print(f"device: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA'}; torch {torch.__version__}; "
      f"default encoder {m.default_model_dir()}")
EOF
