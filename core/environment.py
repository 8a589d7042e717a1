"""Every environment variable the tool reads, declared once: its name, what it changes and how its value is read.
A bad value is refused with a message naming the variable and what was expected (a plain int() would show a
traceback), and `python -m core env` (and README's Serving section) lists them from this table.

>>> VARIABLES["NERSELECT_MAX_JOBS"].meaning.split(";")[0]
'training jobs at once'
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.errors import UserError


@dataclass(frozen=True)
class Variable:
    name: str
    meaning: str
    default: str = ""  # what an unset (or empty) variable reads as, in words where it is computed

    def text(self) -> str | None:
        """The value as set, None when unset or empty."""
        value = os.environ.get(self.name)
        return value if value not in (None, "") else None

    def integer(self, minimum: int = 0) -> int | None:
        """The value as an integer of at least `minimum`; None when unset."""
        value = self.text()
        if value is None:
            return None
        try:
            number = int(value)
        except ValueError:
            raise UserError(f"${self.name} is {value!r}: expected a whole number ({self.meaning})") from None
        if number < minimum:
            raise UserError(f"${self.name} is {number}: expected at least {minimum} ({self.meaning})")
        return number


VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("NERSELECT_WORKSPACE", "the workspace folder the app and the CLI open", "./workspace"),
    Variable("NERSELECT_CREATE_WORKSPACE", "1: every CLI command may create a missing workspace (--create-workspace)"),
    Variable("NERSELECT_ADDRESS", "the address scripts/app.sh serves on", "127.0.0.1"),
    Variable("NERSELECT_PORT", "the port scripts/app.sh serves on", "8501"),
    Variable("NERSELECT_DATA_ROOTS", "folders (os.pathsep-separated) whose files signed-in users may name"),
    Variable("NERSELECT_OIDC_TRUST_EMAIL", "1: trust an OIDC provider's e-mail when it sends no email_verified claim "
                                           "(only for a provider that owns its users' addresses)"),
    Variable("NERSELECT_MAX_JOBS", "training jobs at once; with cards set, it caps them instead of memory deciding",
             "1 on CPU, memory decides on cards"),
    Variable("NERSELECT_MAX_INTERACTIVE_JOBS", "interactive jobs (embed, select, map, ...) at once", "2"),
    Variable("NERSELECT_TRAINING_NICE", "niceness added to training job processes", "10"),
    Variable("NERSELECT_GPU_BUDGET", "simulated cards 'INDEX:MIB,...' (tests), or a cap on what the runner uses",
             "nvidia-smi's cards"),
    Variable("NERSELECT_JOB_GPU_MIB", "MiB a job reserves on a card before its recipe's peak was measured", "8192"),
    Variable("NERSELECT_TORCH_THREADS", "torch CPU threads in a job process", "torch's default (one per core)"),
    Variable("NERSELECT_CPU_PRECISION", "'fp32' or 'bf16': a CPU's training precision where a recipe says auto (a study "
             "pins it, so its cells pair with those run on another CPU)", "bf16 where the CPU has it natively and a probe "
             "shows it pays, else fp32"),
    Variable("NERSELECT_ADAMW", "'fused' or 'foreach': the AdamW implementation on CPU", "fused"),
    Variable("NERSELECT_CROSSNER", "the CrossNER data folder of the study scripts", "../shared/data/crossner"),
    Variable("NERSELECT_COMMIT", "the commit a study result names; set on a device copy, whose .git can be older than "
             "its tree", "git's HEAD"),
    Variable("NERSELECT_ENCODER_NOTE", "a study result's note on the encoder's weights (scripts/device_env.sh: fp16-rounded "
             "for the device carry)", "none"),
    Variable("CUDA_VISIBLE_DEVICES", "the cards this process sees (the runner sets it per job)", "all"),
    Variable("NUMBA_CACHE_DIR", "where numba keeps UMAP's compiled code (scripts/app.sh sets it)", "<venv>/numba-cache"),
)}


def variable(name: str) -> Variable:
    return VARIABLES[name]


def visible_devices() -> list[str] | None:
    """CUDA_VISIBLE_DEVICES split into its entries; None when unset (every card is visible)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")  # set but empty means "no card", unlike the other variables
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def describe() -> list[dict[str, str]]:
    """The table `python -m core env` prints: each variable, its value here and what it changes."""
    return [{"variable": v.name, "value": os.environ.get(v.name, ""), "default": v.default, "meaning": v.meaning}
            for v in VARIABLES.values()]
