"""Training speed and one experiment cell: a named baseline vs the code at 2acd97f ("old") vs today's ("new").

Same data and model for every row: the CrossNER study corpora of --domain (core.experiments.study: TC = train + dev
half A, LC = train, DEV = dev half A, DC = dev half B + the other domains, TEST = test) when
../shared/data is present, else the same roles from the generated demo; encoder --model (`default`).

  throughput   NER: optimizer steps/s and sentences/s fine-tuning BERT-CRF on LC (batch 16, no dev pass).
               MLM: steps/s, sentences/s and real (non-pad) tokens/s on TC+SC (batch 16).
               baseline = a plain fp32 PyTorch loop: the tokenizer and padding per batch, AdamW;
                 NER: encoder -> linear -> pytorch-crf over each word's first sub-token (BIO tags);
                 MLM: DataCollatorForLanguageModeling, one sentence per example, transformers' loss
                 (vocabulary head on every position).
               baseline-bf16 = the same loop under torch.autocast(bfloat16), where the device has bf16 (CUDA's
                 check, or the CPU's bf16 instructions): the loop to beat on a GPU (issue 25 asks >= 1.3x).
               quality, so speed is compared at equal quality after the same steps (not timed): NER TEST F1,
                 scored the product's way; MLM masked-LM loss on 256 DEV sentences with the same masks for all.
               old / new = train_ner / train_mlm (core.train.ner, core.train.mlm) of that commit, `--steps` steps;
               new-foreach = new with torch's default AdamW instead of the fused one (core.train.training.adamw).
  cell         MLM on TC+SC (SC = |TC| DC sentences drawn with a fixed seed, mixed 1:1) then NER on LC to
               convergence (early stopping on DEV), TEST F1: wall seconds and F1 per seed, old vs new, both
               with the `study` preset's settings (old ignores the fields it lacks: eval_every, min_delta, bucket)
               and checkpoints on, as in an experiment.

Every measurement runs in its own subprocess with the same thread count; "old" imports the package
from `git archive 2acd97f core` placed first on sys.path. bf16 is detected (CPU flags + a timing
probe, CUDA's own check), never assumed; the JSON records the precision each row ran with.

Quiet machine, the figure (about 80 min on 2 free bf16-capable cores with the study preset: an old cell took 13-15 min,
a new one 8-10; rerun the same command after an interruption and finished measurements are kept):
    python bench/bench_training.py --steps 30 --seeds 1,2,3 --threads 2 --workdir bench/results/training-work
Smoke (a few minutes):
    python bench/bench_training.py --steps 2 --seeds 1 --cell-preset tiny --threads 1
On a GPU (issue 25): the timed rows at a stable length, then where the time goes (torch.profiler tables and the
count of host-device syncs per step, bench/results/training-profile-*):
    python bench/bench_training.py --device cuda --steps 300 --seeds 1 --skip old,new-foreach
    python bench/bench_training.py --device cuda --profile 50
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import CROSSNER, print_table, write_json

ROOT = Path(__file__).resolve().parent.parent
OLD_COMMIT = "2acd97f"


# --------------------------------------------------------------------------- worker side (one subprocess per measurement)


def _known(cls, settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    from dataclasses import fields

    names = {f.name for f in fields(cls)}
    return {k: v for k, v in settings.items() if k in names}, sorted(k for k in settings if k not in names)


# What the old/new workers call, by module of today's package (core.NAME in the flat package of the "old" commit).
_MODULES = {"ner": ("core.train.ner_train", "core.train.ner_predict", "core.train.ner_model"), "mlm": ("core.train.mlm",),
            "corpus": ("core.data.corpus",)}


def _core(name: str) -> Any:
    """One namespace with what core.NAME held before the subpackages: core.NAME itself in the flat package (the "old"
    commit), else the public names of today's modules that took its place (ner: train, predict, model)."""
    import importlib
    import importlib.util
    from types import SimpleNamespace

    if importlib.util.find_spec("core.data") is None:
        return importlib.import_module(f"core.{name}")
    merged: dict[str, Any] = {}
    for module in _MODULES[name]:
        merged.update({k: v for k, v in vars(importlib.import_module(module)).items() if not k.startswith("_")})
    return SimpleNamespace(**merged)


def _product_ner(spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    ner, read_corpus = _core("ner"), _core("corpus").read_corpus

    lc = read_corpus(spec["lc"])
    settings, dropped = _known(ner.NerConfig, {**spec["ner"], "max_steps": spec["steps"], "epochs": 10_000, "seed": 1,
                                               "checkpoint_every": 0, "device": spec["device"]})
    r = ner.train_ner(lc, None, spec["model"], tmp / "ner", ner.NerConfig.from_dict(settings), overwrite=True)
    test_f1 = None if spec.get("profile") else ner.evaluate(ner.load_ner_model(tmp / "ner"), read_corpus(spec["test"]))["f1"]
    return {"steps": r["steps"], "seconds": r["seconds"], "sentences": r["steps"] * settings["batch_size"],
            "precision": r.get("precision", "fp32"), "ignored": dropped, "test_f1": test_f1}


def _product_mlm(spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    mlm = _core("mlm")

    texts = json.loads(Path(spec["texts"]).read_text("utf-8"))
    settings, dropped = _known(mlm.MlmConfig, {**spec["mlm"], "max_steps": spec["steps"], "epochs": 10_000, "seed": 1,
                                               "warmup_ratio": 0.0, "checkpoint_every": 0, "device": spec["device"]})
    r = mlm.train_mlm(texts, spec["model"], tmp / "mlm", mlm.MlmConfig.from_dict(settings), overwrite=True)
    seen = r["steps"] * settings["batch_size"]  # examples trained on
    per_example = r["sentences"] / r["examples"]
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    quality = None if spec.get("profile") else _heldout_mlm_loss(spec, AutoModelForMaskedLM.from_pretrained(tmp / "mlm"),
                                                                 AutoTokenizer.from_pretrained(tmp / "mlm"), r.get("device", "cpu"))
    return {"steps": r["steps"], "seconds": r["seconds"], "sentences": seen * per_example, "tokens_per_s": r["tokens_per_s"],
            "precision": r.get("precision", "fp32"), "ignored": dropped, "heldout_mlm_loss": quality}


def _product_cell(spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """MLM on TC+SC, NER on LC with early stopping on DEV, TEST F1 — with checkpoints, as an experiment cell runs."""
    mlm, ner, read_corpus = _core("mlm"), _core("ner"), _core("corpus").read_corpus

    seed = spec["seed"]
    texts = json.loads(Path(spec["texts"]).read_text("utf-8"))
    lc, dev, test = (read_corpus(spec[k]) for k in ("lc", "dev", "test"))
    mlm_settings, mlm_dropped = _known(mlm.MlmConfig, {**spec["mlm"], "seed": seed, "device": spec["device"]})
    ner_settings, ner_dropped = _known(ner.NerConfig, {**spec["ner"], "seed": seed, "device": spec["device"]})
    t0 = time.time()
    m = mlm.train_mlm(texts, spec["model"], tmp / "mlm" / "model", mlm.MlmConfig.from_dict(mlm_settings),
                      checkpoint_dir=tmp / "mlm", overwrite=True)
    t1 = time.time()
    n = ner.train_ner(lc, dev, str(tmp / "mlm" / "model"), tmp / "ner" / "model", ner.NerConfig.from_dict(ner_settings),
                      checkpoint_dir=tmp / "ner", overwrite=True)
    t2 = time.time()
    scores = ner.evaluate(ner.load_ner_model(tmp / "ner" / "model"), test, batch_size=ner_settings.get("eval_batch_size", 64))
    t3 = time.time()
    return {"seed": seed, "wall_s": t3 - t0, "mlm_s": t1 - t0, "ner_s": t2 - t1, "test_eval_s": t3 - t2, "mlm_steps": m["steps"],
            "ner_steps": n["steps"], "ner_epochs": n["epochs_run"], "best_epoch": n["best_epoch"], "best_dev_f1": n["best_dev_f1"],
            "test_f1": scores["f1"], "ignored": sorted(set(mlm_dropped) | set(ner_dropped))}


def _plain_precision(spec: dict[str, Any], device: str) -> tuple[Any, str]:
    """The plain loop's autocast context: bf16 for `baseline-bf16` (what a researcher adds first for speed), else none."""
    import torch

    if spec["impl"] != "baseline-bf16":
        return contextlib.nullcontext(), "fp32"
    return torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16), "bf16"


def _first_subtokens(e: Any, n: int) -> list[list[int]]:
    """Position of each word's first sub-token, per sentence of a tokenizer batch. The plain loop's own (it must not
    lean on core.train.ner_model.encode_words); a word with no sub-token shifts the tags after it, as a first loop does."""
    out = []
    for b in range(n):
        seen: dict[int, int] = {}
        for pos, w in enumerate(e.word_ids(b)):
            if w is not None and w not in seen:
                seen[w] = pos
        out.append([seen[w] for w in sorted(seen)])
    return out


def _baseline_ner(spec: dict[str, Any], _tmp: Path) -> dict[str, Any]:
    """A plain BERT-CRF loop (fp32, or under bf16 autocast): what a researcher writes first (tokenize and pad every
    batch); TEST F1 after the same steps, so speed is compared at equal quality."""
    import torch
    from torchcrf import CRF
    from transformers import AutoModel, AutoTokenizer

    from core.data.corpus import read_corpus
    from core.lm.models import pick_device, resolve_model

    torch.manual_seed(1)
    lc = read_corpus(spec["lc"])
    path = resolve_model(spec["model"]).load_path
    tok, enc = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path, dtype=torch.float32)
    labels = sorted({t for seq in lc.tags for t in seq})
    index = {t: i for i, t in enumerate(labels)}
    emit, crf = torch.nn.Linear(enc.config.hidden_size, len(labels)), CRF(len(labels), batch_first=True)
    device = pick_device(spec["device"])  # the product's own choice, cuda:N included
    for m in (enc, emit, crf):
        m.to(device).train()
    amp, precision = _plain_precision(spec, device)
    cfg = spec["ner"]
    opt = torch.optim.AdamW([{"params": enc.parameters(), "lr": cfg.get("lr", 5e-5)},
                             {"params": [*emit.parameters(), *crf.parameters()], "lr": cfg.get("head_lr") or cfg.get("lr", 5e-5)}],
                            weight_decay=1e-8)
    bs, n = cfg.get("batch_size", 16), len(lc)
    t0 = time.time()
    order: list[int] = []
    for _ in range(spec["steps"]):
        if not order:
            order = torch.randperm(n).tolist()
        idx, order = order[:bs], order[bs:]
        words = [lc.tokens[i] for i in idx]
        e = tok(words, is_split_into_words=True, truncation=True, max_length=256, padding=True, return_tensors="pt")
        firsts = _first_subtokens(e, len(idx))
        width = max(len(f) for f in firsts)
        gather = torch.zeros(len(idx), width, dtype=torch.long)
        mask = torch.zeros(len(idx), width, dtype=torch.bool)
        tags = torch.zeros(len(idx), width, dtype=torch.long)
        for b, f in enumerate(firsts):
            gather[b, : len(f)], mask[b, : len(f)] = torch.tensor(f), True
            tags[b, : len(f)] = torch.tensor([index[t] for t in lc.tags[idx[b]][: len(f)]])
        with amp:
            hidden = enc(**{k: v.to(device) for k, v in e.items()}).last_hidden_state
            words_h = hidden.gather(1, gather.to(device).unsqueeze(-1).expand(-1, -1, hidden.size(-1)))
            emissions = emit(words_h)
        loss = -crf(emissions.float(), tags.to(device), mask.to(device), reduction="mean")
        loss.backward()
        torch.nn.utils.clip_grad_norm_([*enc.parameters(), *emit.parameters(), *crf.parameters()], 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    seconds = time.time() - t0

    def predict(sentences: list[list[str]]) -> list[list[str]]:
        e = tok(sentences, is_split_into_words=True, truncation=True, max_length=256, padding=True, return_tensors="pt")
        firsts = _first_subtokens(e, len(sentences))
        width = max(1, *(len(f) for f in firsts))
        gather = torch.zeros(len(sentences), width, dtype=torch.long)
        mask = torch.zeros(len(sentences), width, dtype=torch.bool)
        for b, f in enumerate(firsts):
            gather[b, : len(f)], mask[b, : len(f)] = torch.tensor(f, dtype=torch.long), True
        mask[:, 0] = True  # pytorch-crf wants the first position on; an empty sentence's one tag is dropped below
        hidden = enc(**{k: v.to(device) for k, v in e.items()}).last_hidden_state
        words_h = hidden.gather(1, gather.to(device).unsqueeze(-1).expand(-1, -1, hidden.size(-1)))
        paths = crf.decode(emit(words_h).float(), mask.to(device))
        # words past the 256-sub-token cut are predicted O, as an untruncated reader would count them missed
        return [[labels[t] for t in path[: len(f)]] + ["O"] * (len(s) - len(f)) for path, f, s in zip(paths, firsts, sentences)]

    return {"steps": spec["steps"], "seconds": seconds, "sentences": spec["steps"] * bs, "precision": precision, "ignored": [],
            "test_f1": None if spec.get("profile") else _plain_test_f1(spec, predict, [enc, emit, crf])}


def _plain_test_f1(spec: dict[str, Any], predict: Any, modules: list[Any]) -> float:
    """TEST F1 of the plain loop's model, scored as the product scores (core.train.ner_predict.scores_from_tags on
    BIOES), in fp32 and eval mode, batch 64; not part of the timed seconds."""
    import torch

    from core.data.corpus import read_corpus
    from core.data.tags import TagScheme, convert_tags
    from core.train.ner_predict import scores_from_tags

    test = read_corpus(spec["test"])
    for m in modules:
        m.eval()
    pred: list[list[str]] = []
    with torch.no_grad():
        for i in range(0, len(test), 64):
            pred += predict(test.tokens[i:i + 64])
    scheme = test.scheme
    return float(scores_from_tags(test.with_scheme(TagScheme.BIOES).tags,
                                  [convert_tags(p, scheme, TagScheme.BIOES) for p in pred])["f1"])


def _baseline_mlm(spec: dict[str, Any], _tmp: Path) -> dict[str, Any]:
    """transformers' recipe: one sentence per example, DataCollatorForLanguageModeling padding per batch, model(**batch).loss."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

    from core.lm.models import pick_device, resolve_model

    torch.manual_seed(1)
    texts = json.loads(Path(spec["texts"]).read_text("utf-8"))
    path = resolve_model(spec["model"]).load_path
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForMaskedLM.from_pretrained(path, dtype=torch.float32)
    device = pick_device(spec["device"])  # the product's own choice, cuda:N included
    model.to(device).train()
    amp, precision = _plain_precision(spec, device)
    cfg = spec["mlm"]
    examples = [{"input_ids": ids} for ids in tok(texts, truncation=True, max_length=cfg.get("block_size", 128))["input_ids"]]
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.get("lr", 1e-4), weight_decay=0.01)
    bs = cfg.get("batch_size", 16)
    t0, tokens = time.time(), 0
    order: list[int] = []
    for _ in range(spec["steps"]):
        if not order:
            order = torch.randperm(len(examples)).tolist()
        idx, order = order[:bs], order[bs:]
        batch = collator([examples[i] for i in idx])
        tokens += int(batch["attention_mask"].sum())  # on the CPU, before the copy: no wait for the device
        batch = {k: v.to(device) for k, v in batch.items()}
        with amp:
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    seconds = time.time() - t0
    return {"steps": spec["steps"], "seconds": seconds, "sentences": spec["steps"] * bs, "tokens_per_s": tokens / seconds,
            "precision": precision, "ignored": [],
            "heldout_mlm_loss": None if spec.get("profile") else _heldout_mlm_loss(spec, model, tok, device)}


def _heldout_mlm_loss(spec: dict[str, Any], model: Any, tok: Any, device: str) -> float:
    """Masked-LM loss on DEV's first 256 sentences (never trained on), the same masks for every implementation
    (fixed seed), fp32, eval mode: the MLM rows' equal-quality check; not part of the timed seconds."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    from core.data.corpus import read_corpus

    texts = read_corpus(spec["dev"]).texts()[:256]
    examples = [{"input_ids": ids} for ids in tok(texts, truncation=True, max_length=128)["input_ids"]]
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)
    model.to(device).eval()
    torch.manual_seed(0)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(examples), 32):
            batch = {k: v.to(device) for k, v in collator(examples[i:i + 32]).items()}
            n = int((batch["labels"] != -100).sum())
            total += float(model(**batch).loss) * n
            count += n
    return total / max(count, 1)


TASKS = {(impl, task): fn for impl in ("baseline", "baseline-bf16") for task, fn in (("ner", _baseline_ner), ("mlm", _baseline_mlm))}
PLAIN = ("baseline", "baseline-bf16")


def _profiled(fn: Any, spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Run one measurement under torch.profiler (operator table by self device time, or CPU time on a CPU) and, on
    CUDA, count host-device syncs (torch.cuda.set_sync_debug_mode warns once per synchronizing call). The table and
    the count say where the product waits; the seconds of a profiled run are not a throughput figure, and the quality
    check is left out (it is not training)."""
    import warnings

    import torch
    from torch.profiler import ProfilerActivity, profile

    from core.lm.models import pick_device

    cuda = pick_device(spec["device"]).startswith("cuda")
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with warnings.catch_warnings(record=True) as caught, profile(activities=activities) as prof:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            result = fn(spec, tmp)
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
    syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message)]
    sort = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    result["profile_table"] = prof.key_averages().table(sort_by=sort, row_limit=25)
    result["syncs"] = len(syncs) if cuda else None  # the whole run: loading, training and the final save
    return result


def worker(spec_path: str, out_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text("utf-8"))
    if spec.get("core_root"):
        sys.path.insert(0, spec["core_root"])  # before any `import core`: the old package wins
    if spec.get("threads"):
        import torch

        torch.set_num_threads(int(spec["threads"]))
    from transformers.utils import logging as hf_logging

    import core

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    fn = TASKS.get((spec["impl"], spec["task"])) or {"ner": _product_ner, "mlm": _product_mlm, "cell": _product_cell}[spec["task"]]
    with tempfile.TemporaryDirectory() as tmp:
        result = _profiled(fn, spec, Path(tmp)) if spec.get("profile") else fn(spec, Path(tmp))
    result["core"] = str(Path(core.__file__).resolve().parent)
    Path(out_path).write_text(json.dumps(result), "utf-8")


# --------------------------------------------------------------------------- parent side


def _old_tree(commit: str) -> Path:
    """`git archive COMMIT core` unpacked once under /tmp (the package as it was, nothing else), or
    $BENCH_OLD_TREE where there is no git history (a GPU machine gets the working tree only)."""
    if os.environ.get("BENCH_OLD_TREE"):
        return Path(os.environ["BENCH_OLD_TREE"]).resolve()
    target = Path(tempfile.gettempdir()) / f"old{commit}"
    if not (target / "core" / "ner.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "core"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _run(spec: dict[str, Any], tmp: Path, label: str) -> dict[str, Any]:
    spec_path, out_path = tmp / f"{label}.spec.json", tmp / f"{label}.out.json"
    if out_path.exists() and spec_path.exists() and json.loads(spec_path.read_text("utf-8")) == spec:
        print(f"  {label}: kept from an earlier run in {tmp}", flush=True)
        return json.loads(out_path.read_text("utf-8"))
    out_path.unlink(missing_ok=True)
    spec_path.write_text(json.dumps(spec), "utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if spec.get("threads"):
        env["NERSELECT_TORCH_THREADS"] = str(spec["threads"])
    env["NERSELECT_ADAMW"] = "foreach" if spec["impl"] == "new-foreach" else "fused"
    print(f"  running {label} ...", flush=True)
    t0 = time.time()
    proc = subprocess.run([sys.executable, __file__, "--worker", str(spec_path), str(out_path)], env=env, capture_output=True,
                          text=True, cwd=str(tmp))
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(out_path.read_text("utf-8"))
    expected = spec.get("core_root") or str(ROOT)
    if spec["impl"] not in PLAIN and not result["core"].startswith(str(Path(expected).resolve())):
        raise SystemExit(f"{label} imported core from {result['core']}, expected {expected}")
    print(f"    done in {time.time() - t0:.0f}s", flush=True)
    return result


def _bf16_report(device: str) -> dict[str, Any]:
    import torch

    from core.lm.precision import cpu_has_bf16
    from core.train.training import cpu_bf16_pays, pick_device, resolve_precision

    dev = pick_device(device)
    out = {"device": dev, "cpu_bf16_flags": cpu_has_bf16(), "precision_auto": resolve_precision(dev, "auto")}
    if dev == "cpu":
        out["cpu_bf16_pays"] = cpu_bf16_pays()
    else:
        out["cuda_bf16_supported"] = bool(torch.cuda.is_bf16_supported())
    return out


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _profile_rows(impls: list[str], common: dict[str, Any], tmp: Path, steps: int, tput_ner: dict[str, Any],
                  tput_mlm: dict[str, Any], bf16: dict[str, Any]) -> None:
    """--profile: where each implementation spends its time, and how often the host waits for the device."""
    from _common import RESULTS

    RESULTS.mkdir(parents=True, exist_ok=True)
    table = []
    for impl in impls:
        for task, settings in (("ner", tput_ner), ("mlm", tput_mlm)):
            # STEPS and 2 x STEPS: loading and saving cost the same syncs in both, so their difference is the steps'
            runs = [_run({**common, "impl": impl, "task": task, "steps": n, "core_root": None, task: settings,
                          "profile": True}, tmp, f"profile-{impl}-{task}-{n}") for n in (steps, 2 * steps)]
            out = RESULTS / f"training-profile-{impl}-{task}.txt"
            out.write_text(runs[1].pop("profile_table"), "utf-8")
            per_step = (runs[1]["syncs"] - runs[0]["syncs"]) / steps if runs[0]["syncs"] is not None else None
            table.append({"task": task.upper(), "impl": impl, "steps": 2 * steps, "syncs (whole run)": runs[1]["syncs"],
                          "syncs/step": per_step, "precision": runs[1]["precision"], "operator table": out.name})
    print_table(table, f"Profile, {2 * steps} steps each (device {bf16['device']}; host-device syncs counted on CUDA only, "
                       f"per step from the difference of a {steps}- and a {2 * steps}-step run)")
    write_json("training-profile", {"device": bf16, "steps": steps, "rows": table})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--domain", default="music")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per throughput row")
    parser.add_argument("--seeds", default="1,2,3", help="experiment-cell seeds (comma-separated; empty: no cell rows)")
    parser.add_argument("--cell-preset", default="study", help="preset whose MLM/NER settings the cell uses (old and new alike)")
    parser.add_argument("--cell-mlm-steps", type=int, help="override the preset's MLM step cap in the cell (shorter figure runs)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads in every subprocess")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--old", default=OLD_COMMIT, help="commit of 'today's code' to compare with")
    parser.add_argument("--skip", default="", help="comma-separated impls to leave out (baseline, baseline-bf16, old, "
                        "new-foreach, new)")
    parser.add_argument("--profile", type=int, metavar="STEPS", help="instead of the timed rows: profile baseline-bf16 (or "
                        "baseline without bf16) and new for STEPS and 2 x STEPS steps each under torch.profiler, count CUDA "
                        "host-device syncs per step, and write the operator tables to bench/results/training-profile-*.txt")
    parser.add_argument("--workdir", help="keep every measurement here; rerunning the same command reuses the finished "
                        "ones (a figure that spans sessions); default: a temporary folder")
    parser.add_argument("--worker", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import random

    from core.data.corpus import write_corpus
    from core.experiments.study import crossner_protocol, demo_protocol
    from core.recipes import presets
    from core.train import mlm

    study = crossner_protocol(CROSSNER, args.domain) if (CROSSNER / args.domain / "train.txt").exists() else demo_protocol(args.domain)
    rng = random.Random(0)
    sc = rng.sample(study.dc.texts(), min(len(study.tc), len(study.dc)))
    texts = mlm.balanced_mix(study.tc.texts(), sc, seed=0)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    bf16 = _bf16_report(args.device)
    # the plain bf16 loop only where bf16 is real: CUDA's own check, or the CPU's bf16 instructions (detected, not assumed)
    bf16_ok = bf16.get("cuda_bf16_supported", bool(bf16.get("cpu_bf16_flags")))
    impls = [i for i in ("baseline", "baseline-bf16", "old", "new-foreach", "new") if i not in skip and (bf16_ok or i != "baseline-bf16")]
    if args.profile:
        impls = [i for i in ("baseline-bf16" if bf16_ok else "baseline", "new") if i not in skip]
    old_root = str(_old_tree(args.old)) if "old" in impls else None
    ner_settings = presets.ner_settings(args.cell_preset)
    mlm_settings = presets.mlm_settings(args.cell_preset, max_steps=args.cell_mlm_steps)
    tput_ner = {"batch_size": 16, "lr": 5e-5, "head_lr": 1e-3}
    tput_mlm = {"batch_size": 16, "block_size": 128, "lr": 1e-4}
    print(f"data: {study.source} {args.domain} {study.sizes()}; MLM text TC+SC {len(texts)} sentences; device {bf16}")
    rows, cells = [], []
    with contextlib.nullcontext(args.workdir) if args.workdir else tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name).resolve()
        tmp.mkdir(parents=True, exist_ok=True)
        paths = {}
        for role in ("lc", "dev", "test"):
            paths[role] = str(write_corpus(getattr(study, role), tmp / f"{role}.conll", "conll"))
        (tmp / "texts.json").write_text(json.dumps(texts), "utf-8")
        common = {"model": args.model, "device": args.device, "threads": args.threads, "texts": str(tmp / "texts.json"), **paths}
        if args.profile:
            _profile_rows(impls, common, tmp, args.profile, tput_ner, tput_mlm, bf16)
            return
        for impl in impls:
            root = old_root if impl == "old" else None
            for task, settings in (("ner", tput_ner), ("mlm", tput_mlm)):
                spec = {**common, "impl": impl, "task": task, "steps": args.steps, "core_root": root, task: settings}
                r = _run(spec, tmp, f"{impl}-{task}")
                rows.append({"impl": impl, "task": task, **r})
        for seed in seeds:
            for impl in (i for i in impls if i in ("old", "new")):
                spec = {**common, "impl": impl, "task": "cell", "seed": seed, "core_root": old_root if impl == "old" else None,
                        "ner": ner_settings, "mlm": mlm_settings}
                cells.append({"impl": impl, **_run(spec, tmp, f"{impl}-cell-seed{seed}")})

    table = []
    base = {r["task"]: r for r in rows if r["impl"] == "baseline"}
    base16 = {r["task"]: r for r in rows if r["impl"] == "baseline-bf16"}
    for r in rows:
        sps = r["sentences"] / r["seconds"]
        ref, ref16 = base.get(r["task"]), base16.get(r["task"])
        table.append({"task": r["task"].upper(), "impl": r["impl"] + (f" ({args.old})" if r["impl"] == "old" else ""),
                      "steps": r["steps"], "steps/s": r["steps"] / r["seconds"], "sentences/s": sps,
                      "tokens/s": r.get("tokens_per_s"), "x baseline": sps / (ref["sentences"] / ref["seconds"]) if ref else None,
                      "x bf16 loop": sps / (ref16["sentences"] / ref16["seconds"]) if ref16 else None,
                      "quality": (f"TEST F1 {100 * r['test_f1']:.2f}" if r.get("test_f1") is not None else
                                  f"DEV MLM loss {r['heldout_mlm_loss']:.3f}" if r.get("heldout_mlm_loss") is not None else None),
                      "precision": r["precision"]})
    print_table(table, f"Throughput, {args.steps} steps each, batch 16 ({study.source} {args.domain}; threads {args.threads or 'default'})")
    cell_summary: dict[str, Any] = {}
    if cells:
        crow = []
        for impl in dict.fromkeys(c["impl"] for c in cells):
            cs = [c for c in cells if c["impl"] == impl]
            wall, f1 = _mean_std([c["wall_s"] for c in cs]), _mean_std([c["test_f1"] for c in cs])
            cell_summary[impl] = {"wall_mean": wall[0], "wall_std": wall[1], "f1_mean": f1[0], "f1_std": f1[1], "n": len(cs)}
            crow.append({"impl": impl, "seeds": len(cs), "wall s": f"{wall[0]:.0f} ± {wall[1]:.0f}",
                         "MLM s": statistics.fmean(c["mlm_s"] for c in cs), "NER s": statistics.fmean(c["ner_s"] for c in cs),
                         "NER epochs": statistics.fmean(c["ner_epochs"] for c in cs),
                         "test F1 %": f"{100 * f1[0]:.2f} ± {100 * f1[1]:.2f}"})
        print_table(crow, f"Experiment cell (preset {args.cell_preset}: MLM on TC+SC, NER on LC to convergence, TEST F1)")
        if {"old", "new"} <= set(cell_summary):
            o, n = cell_summary["old"], cell_summary["new"]
            cell_summary["speedup"] = o["wall_mean"] / n["wall_mean"]
            cell_summary["f1_equal_within_1sd"] = abs(o["f1_mean"] - n["f1_mean"]) <= max(o["f1_std"], n["f1_std"])
            print(f"\ncell speed-up new vs old: {cell_summary['speedup']:.2f}x; |F1 difference| "
                  f"{100 * abs(o['f1_mean'] - n['f1_mean']):.2f} points, within one std: {cell_summary['f1_equal_within_1sd']}")
        ignored = sorted({k for c in cells if c["impl"] == "old" for k in c["ignored"]})
        if ignored:
            print(f"(old code has no {', '.join(ignored)}: it evaluates on the full DEV every epoch with the plain early stopping)")
    write_json("training", {"args": vars(args), "data": {"source": study.source, "domain": args.domain, **study.sizes(),
                                                          "mlm_sentences": len(texts)},
                            "bf16": bf16, "old_commit": args.old, "throughput": table, "raw": rows, "cells": cells,
                            "cell_summary": cell_summary, "cell_settings": {"mlm": mlm_settings, "ner": ner_settings}})


if __name__ == "__main__":
    main()
