"""Checkpoint selection: continued MLM can move the encoder away from what NER needs (issue 26 measured TAPT and
selected data below no pretraining), so the model a pretraining phase hands on is the one a cheap probe scores
best among the base encoder and the phase's kept snapshots, never silently one that scores below the base.

The probe is DEV F1 after a short NER fine-tune on LC (the base encoder has no trained MLM head, so a masked-word
loss cannot score it against the snapshots; DEV F1 can, and it is what the user cares about). It costs one short
NER run per candidate. Ties go to the earlier candidate, the base encoder first: no pretraining unless it helped.

The short probe rewards an encoder that converges faster as much as one that ends better: on CrossNER literature
the chosen snapshots led the base by +4.5 DEV F1 points after 8 epochs, by +0.7 after the full fine-tune, and
trailed it on TEST (docs/results/ablation.md). So a pick is a guard against a clearly worse encoder, not proof of a
gain; experiments say the converged DEV F1 against no pretraining beside it (summary.dev_lines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.atomic import atomic_write_json
from core.data.corpus import Corpus
from core.errors import UserError
from core.progress import Progress
from core.recipes.presets import DEFAULT_PRESET
from core.runner.params import PickParams, field_default

if TYPE_CHECKING:
    from core.runner.jobs import JobContext

PROBE = "dev-f1"
FREED_FILE = "FREED.json"  # in a snapshots folder whose unused snapshots were deleted (core.experiments.disk)
# the short fine-tune: enough to rank encoders on a small LC, far below a full NER run (declared in PickParams)
PROBE_EPOCHS = field_default(PickParams, "epochs")


@dataclass(frozen=True)
class Candidate:
    label: str  # "base", "step-200", "final"
    path: str  # model id or folder
    step: int | None  # None: the base encoder, before any MLM


def candidates(base: str, snapshot_dir: str | Path | None = None, final: str | Path | None = None) -> list[Candidate]:
    """The base encoder, every kept snapshot (step order), and the phase's final model if it is not a snapshot."""
    out = [Candidate("base", str(base), None)]
    steps = []
    if snapshot_dir is not None and (Path(snapshot_dir) / FREED_FILE).is_file():
        raise UserError(f"{snapshot_dir}: the snapshots no pick chose were deleted to free disk space (`python -m core "
                        "runs free-snapshots` or the Runs page's Disk use; see FREED.json), so a new pick here would "
                        "choose among fewer candidates than the run's earlier picks did: run it in a new run folder "
                        "(a new --out) instead")
    if snapshot_dir is not None and Path(snapshot_dir).is_dir():
        for folder in Path(snapshot_dir).iterdir():
            if (m := re.fullmatch(r"step-(\d+)", folder.name)) and (folder / "config.json").is_file():
                steps.append((int(m.group(1)), folder))
    out += [Candidate(f"step-{n}", str(folder), n) for n, folder in sorted(steps)]
    if final is not None and (Path(final) / "config.json").is_file():
        info = Path(final) / "mlm_info.json"
        step = json.loads(info.read_text("utf-8")).get("steps") if info.is_file() else None
        if step is None or step not in {n for n, _ in steps}:
            out.append(Candidate("final", str(final), step))
    return out


def end_of_run(labels: Iterable[str]) -> str | None:
    """Which candidate label is the end of the MLM run: "final" when the last step was not a snapshot (see
    `candidates`), else the latest snapshot; None with no pretrained candidate."""
    labels = list(labels)
    if "final" in labels:
        return "final"
    steps = [label for label in labels if re.fullmatch(r"step-\d+", label)]
    return max(steps, key=lambda label: int(label[5:]), default=None)


def mlm_snapshots(run_dir: str | Path, phases: list[dict[str, Any]]) -> Path | None:
    """The snapshot folder of an MLM job's last phase (the one its final model comes from; `phases`: its
    JobResult's), None when it kept none."""
    if not phases:
        return None
    folder = Path(run_dir) / f"phase-{phases[-1]['phase']}" / "snapshots"
    return folder if folder.is_dir() and any(p.name.startswith("step-") for p in folder.iterdir()) else None


def pick_checkpoint(cands: Sequence[Candidate], probe: Callable[[Candidate], float], min_gain: float = 0.0,
                    log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Score every candidate with `probe` (higher is better) and choose. A pretrained candidate is chosen only if it
    beats the base encoder by more than `min_gain`; the result says which, by how much and why.

    >>> c = [Candidate("base", "b", None), Candidate("step-50", "s50", 50), Candidate("step-100", "s100", 100)]
    >>> r = pick_checkpoint(c, lambda x: {"b": 0.60, "s50": 0.64, "s100": 0.58}[x.path])
    >>> r["chosen"]["label"], r["helped"], round(r["gain_over_base"], 2)
    ('step-50', True, 0.04)
    """
    if not cands or cands[0].step is not None:
        raise UserError("checkpoint selection needs the base encoder as its first candidate")
    log = log or (lambda _m: None)
    scored = []
    for c in cands:
        score = float(probe(c))
        scored.append({**asdict(c), "score": score})
        log(f"checkpoint {c.label}: {PROBE} {score:.4f}")
    base = scored[0]
    best = max(scored, key=lambda s: s["score"])  # max keeps the first of equals: the base, then earlier steps
    helped = best is not base and best["score"] > base["score"] + min_gain
    chosen = best if helped else base
    best_mlm = max(scored[1:], key=lambda s: s["score"]) if len(scored) > 1 else None
    if helped:
        reason = (f"{chosen['label']} scored {PROBE} {chosen['score']:.4f}, {100 * (chosen['score'] - base['score']):+.2f} points "
                  f"over the base encoder ({base['score']:.4f}) in the short probe, so this checkpoint is used (the probe "
                  "also rewards faster convergence: the full fine-tune's DEV F1 against no pretraining is the check)")
    elif best_mlm is None:
        reason = "no snapshot was kept: the base encoder is used"
    else:
        reason = (f"no checkpoint beat the base encoder on {PROBE} (base {base['score']:.4f}, best pretrained "
                  f"{best_mlm['label']} {best_mlm['score']:.4f}, {100 * (best_mlm['score'] - base['score']):+.2f} points): "
                  "pretraining did not help in the short probe, so the base encoder is used")
    log(reason)
    return {"probe": PROBE, "chosen": chosen, "helped": helped, "gain_over_base": chosen["score"] - base["score"],
            "base_score": base["score"], "scores": scored, "reason": reason}


def dev_f1_probe(lc: Corpus, dev: Corpus, work_dir: str | Path, preset: str = DEFAULT_PRESET, seed: int = 1,
                 epochs: int = PROBE_EPOCHS, log: Callable[[str], None] | None = None,
                 config: Any = None, progress: Callable[[Candidate], Progress] | None = None
                 ) -> Callable[[Candidate], float]:
    """A probe: best DEV F1 of a short NER fine-tune (the `preset` recipe, or the run's own NER `config` with its
    overrides: device, precision, an out-of-memory retry's grad_accum; at most `epochs` epochs) from the candidate.
    `progress(candidate)`: the callback its fine-tune reports epochs and DEV F1 to."""
    from core.train.ner_train import preset_config, train_ner

    work = Path(work_dir)

    def probe(c: Candidate) -> float:
        base = replace(config, seed=seed) if config is not None else preset_config(preset, seed=seed)
        short = replace(base, epochs=min(base.epochs, epochs))
        result = train_ner(lc, dev, c.path, work / c.label, config=short, log=log, overwrite=True,
                           progress=progress(c) if progress is not None else None)
        return float(result["best_dev_f1"] or 0.0)

    return probe


def pick_job(params: PickParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "pick-checkpoint" (the Runs page and `python -m core pick-checkpoint`): score the candidates, one
    short NER run each (progress per candidate), and return the choice with every score and the reason."""
    ws = ctx.workspace
    lc, dev = ws.resolve_corpus(params.lc), ws.resolve_corpus(params.dev)
    cands = candidates(params.base, params.snapshots, params.final)
    if len(cands) < 2:
        raise UserError(f"nothing to compare with the base encoder: no step-N snapshots in {params.snapshots} and no "
                        "final model (train MLM with snapshots: `mlm --snapshot-every N`, or the Runs page's option)")
    done = [0]
    inner = dev_f1_probe(lc, dev, ctx.run_dir / "probe", params.preset, params.seed, params.epochs, log=ctx.log,
                         progress=lambda c: ctx.sub(done[0] / len(cands), (done[0] + 1) / len(cands),
                                                    f"probing {c.label} ({done[0] + 1} of {len(cands)}): "))

    def probe(c: Candidate) -> float:
        # each candidate's score kept in the run folder: a resumed pick probes only the ones it had not scored
        kept = ctx.run_dir / "probe" / f"{c.label}.score.json"
        known = json.loads(kept.read_text("utf-8")) if kept.is_file() else None
        if known is not None and known.get("path") == c.path:
            score = float(known["dev_f1"])
            ctx.log(f"checkpoint {c.label}: scored in an earlier run of this job, kept")
        else:
            ctx.progress(done[0] / len(cands), f"probing {c.label} ({done[0] + 1} of {len(cands)})")
            score = inner(c)
            atomic_write_json(kept, {"dev_f1": score, "candidate": c.label, "path": c.path})
        done[0] += 1
        ctx.progress(done[0] / len(cands), f"{c.label}: DEV F1 {score:.4f}")
        return score

    return pick_checkpoint(cands, probe, params.min_gain, log=ctx.log)
