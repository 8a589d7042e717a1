"""Dai et al. (2019/2020) on CrossNER (issue 9): does a similarity measure predict the F1 gain of
pretraining on a source?

Sources: the five CrossNER domains, each its train + dev sentences (tags dropped by the MLM).
Target: one domain: its train + dev text is the target text T, its train split is LC, its dev split
DEV, its test split TEST. Per seed: MLM on each source from the base encoder, NER on LC, TEST F1, a
baseline NER run without MLM, the measures of each source against T, and Pearson r of each measure
against the F1 gain, all by the product's own `compare-sources` (core.experiments.compare, through
jobs.run_inline as `python -m core compare-sources` does). The target's own source shares T's text:
Dai et al. include the in-domain source the same way.

Resumable, also on a fresh machine: each target's comparison keeps its run folder (WORKSPACE/runs/compare-<target>-<preset>,
the encoder's name first when it is not the default), and every finished cell (one NER run: target, source or none,
seed) is also written at once, with its TEST counts, to docs/results/parts/crossner-compare-<preset>.json, which the same
command reads back into an empty workspace (`Comparison.restore`: only cells of the same recipe, LC/DEV/TEST and source
contents). Several targets run interleaved: per seed, the baselines, then for each source its MLM model (trained once,
shared) and every target's fine-tune on it, so a session that ends loses at most the model being trained. `--status`
lists the cells still to go. A target whose result JSON (same seeds and measures) is already in docs/results is not run
again (--again does). Writes docs/results/crossner-compare-<target>-<preset>.json (named like the run folder, with the
git commit) when a target's cells are all done.

    python scripts/crossner_compare_sources.py --target music                       # seeds 1,2, preset study
    python scripts/crossner_compare_sources.py --target music --preset tiny --seeds 1 # smoke run
    python scripts/crossner_compare_sources.py --target all                         # the 25 pairs, pooled

With two or more targets' JSONs of one recipe in docs/results, it also writes their pooled (source, target) pairs and
each measure's Pearson r against the gain over them (docs/results/crossner-compare-pooled-<preset>.json; the same as
`python -m core compare-pool FILES --out ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
CROSSNER = Path(os.environ.get("NERSELECT_CROSSNER", ROOT.parent / "shared" / "data" / "crossner"))
DOMAINS = ("ai", "literature", "music", "politics", "science")


def import_sources(ws, target: str) -> dict[str, str]:
    """Each domain's train+dev as a workspace corpus `<domain>-traindev`, and the target's splits with
    their roles (idempotent: the same content under the same name is not imported twice)."""
    from core.data.corpus import Corpus, read_corpus, write_corpus

    folder = ws.root / "source-files"
    folder.mkdir(parents=True, exist_ok=True)
    for d in DOMAINS:
        if not (CROSSNER / d / "train.txt").exists():
            raise SystemExit(f"error: {CROSSNER / d / 'train.txt'} not found (set NERSELECT_CROSSNER)")
        train, dev = read_corpus(CROSSNER / d / "train.txt"), read_corpus(CROSSNER / d / "dev.txt")
        both = Corpus(tokens=[*train.tokens, *dev.tokens], tags=[*train.tags, *dev.tags], name=f"{d}-traindev")
        path = write_corpus(both, folder / f"{d}-traindev.conll", "conll")
        ws.import_corpus(path, role="tc" if d == target else None, name=f"{d}-traindev", overwrite=True)
    for split, role in (("train", "lc"), ("dev", "dev"), ("test", "test")):
        ws.import_corpus(CROSSNER / target / f"{split}.txt", role=role, name=f"{target}-{split}", overwrite=True)
    ws.update_settings(target_domain=target)
    return {"lc": f"{target}-train", "dev": f"{target}-dev", "test": f"{target}-test", "target": f"{target}-traindev"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--target", default="music", help=f"target domain(s): one of {', '.join(DOMAINS)}, a comma-separated "
                    "list, or all (the 25 (source, target) pairs; each source's MLM model is trained once and shared)")
    ap.add_argument("--seeds", default="1,2", help="comma-separated seeds")
    ap.add_argument("--preset", default="study", help="MLM and NER preset (core.recipes.presets.PRESETS)")
    ap.add_argument("--measures", default="tvc,tvcc,ppl,jsd,wvv")
    ap.add_argument("--model", default="default", help="base encoder")
    ap.add_argument("--workspace", default=str(ROOT.parent / "runs" / "crossner-compare"),
                    help="study workspace (outside the checkout: models are large)")
    ap.add_argument("--status", action="store_true", help="list each unfinished target's cells still to go (restoring "
                    "the kept ones first) and the command that continues; trains nothing")
    ap.add_argument("--again", action="store_true", help="run a target whose result JSON of these seeds is already in "
                    "docs/results (by default it is kept, so the same command continues in a later session)")
    args = ap.parse_args()
    targets = list(DOMAINS) if args.target == "all" else [t.strip() for t in args.target.split(",") if t.strip()]
    if not targets or (bad := [t for t in targets if t not in DOMAINS]):
        raise SystemExit(f"error: --target: {', '.join(bad) if targets else '(none)'} is not a CrossNER domain "
                         f"({', '.join(DOMAINS)}, or all)")

    from core.data.workspace import Workspace
    from core.experiments.plan import model_tag

    ws = Workspace(args.workspace)
    # another encoder has its own run folder and JSON: two encoders must never share finished cells
    variant = "-".join(x for x in (model_tag(args.model), args.preset) if x)
    seeds = [int(s) for s in args.seeds.split(",")]
    todo = [t for t in targets if args.again or not kept_target(t, variant, seeds, args.measures.split(","))]
    if args.status:
        return show_status(ws, todo, variant, args)
    if todo:
        run_cells(ws, todo, variant, args)
    for target in todo:
        run_target(ws, target, variant, args)
    pool_results(variant)
    return 0


def result_file(target: str, variant: str) -> Path:
    return ROOT / "docs" / "results" / f"crossner-compare-{target}-{variant}.json"


def parts_file(variant: str) -> Path:
    """Every finished cell of this recipe, of all targets, as it finished: what a fresh machine continues from."""
    return ROOT / "docs" / "results" / "parts" / f"crossner-compare-{variant}.json"


def kept_target(target: str, variant: str, seeds: list[int], measures: list[str]) -> bool:
    out = result_file(target, variant)
    if out.exists() and (done := finished_earlier(out, seeds, measures)):
        print(f"{target}: kept {out.relative_to(ROOT)}, finished at commit {done} (--again runs it anew)")
        return True
    return False


def target_params(ws, target: str, variant: str, args: argparse.Namespace) -> tuple[dict[str, Any], Path]:
    """A target's compare-sources params (its sources imported into the workspace) and its run folder."""
    refs = import_sources(ws, target)
    run_dir = ws.runs_dir / f"compare-{target}-{variant}"
    return {"sources": [f"{d}-traindev" for d in DOMAINS], **refs, "measures": args.measures.split(","),
            "seeds": [int(s) for s in args.seeds.split(",")], "preset": args.preset, "model": args.model,
            # Dai et al.'s design: each domain's train + dev is a source, so the target's own source holds its DEV
            # (refused by default since issue 42); allowed here and recorded, and README reads the diagonal so
            "out": str(run_dir), "allow_dev_in_mlm": True}, run_dir


def read_parts(path: Path) -> list[dict[str, Any]]:
    """The cells kept in the parts file (none when it does not exist); a file that is not one is a UserError."""
    from core.errors import UserError

    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a compare-sources cells file ({exc}); move it away to start over") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UserError(f"{path}: not a compare-sources cells file (expected a list of cells)")
    return [c for c in data["cells"] if isinstance(c, dict) and c.get("target") in DOMAINS]


def comparisons(ws, targets: list[str], variant: str, args: argparse.Namespace, progress,
                kept: list[dict[str, Any]]) -> dict[str, Any]:
    """Each target's `Comparison`, with its cells `kept` in the parts file put back into its run folder."""
    from core.experiments.compare import Comparison
    from core.runner import jobs

    out = {}
    for target in targets:
        params, run_dir = target_params(ws, target, variant, args)
        typed, ctx = jobs.inline_context(ws, "compare-sources", params, run_dir=run_dir, progress=progress)
        out[target] = comparison = Comparison(typed, ctx)
        origin = {"file": str(parts_file(variant).relative_to(ROOT))}
        if restored := comparison.restore([c for c in kept if c["target"] == target], origin):
            print(f"{target}: {restored} finished cells restored from {origin['file']}")
    return out


def run_cells(ws, targets: list[str], variant: str, args: argparse.Namespace) -> None:
    """The targets' cells interleaved (position by position of the common plan: the baselines of a seed, then each
    source's MLM model once and every target's fine-tune on it), each kept in the parts file as soon as it finishes."""
    from crossner_study import git_commit

    from core.cliutil import tqdm_progress
    from core.data.atomic import atomic_write_json
    from core.progress import sub

    path = parts_file(variant)
    with tqdm_progress(f"compare-sources {','.join(targets)}", enabled=True) as bar:
        cells = read_parts(path)
        comps = comparisons(ws, targets, variant, args, bar, cells)
        kept = {(c["target"], c["row"], c["seed"]): c for c in cells}
        plans = {t: comp.plan() for t, comp in comps.items()}  # one order for all targets; sources differ by target
        plan = plans[targets[0]]
        todo = [(i, t) for i in range(len(plan)) for t, comp in comps.items()
                if not comp.cell_file(plan[i][0], plan[i][1]).exists()]
        total, first = len(plan) * len(comps), len(plan) * len(comps) - len(todo)
        for k, (i, target) in enumerate(todo):
            row, seed, src = plans[target][i]
            label = f"{target} <- {'no pretraining' if src is None else row} seed {seed}"
            cell = comps[target].cell(row, seed, src, sub(bar, k / len(todo), (k + 1) / len(todo),
                                                          f"cell {first + k + 1}/{total} {label}: "))
            bar.echo(f"cell {first + k + 1}/{total} {label}: test F1 {100 * cell['f1']:.2f}")
            kept[(target, row, seed)] = {"target": target, **cell}
            atomic_write_json(path, {"command": command(targets, args), **git_commit(),
                                     "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cells": list(kept.values())})


def show_status(ws, targets: list[str], variant: str, args: argparse.Namespace) -> int:
    """How many cells each unfinished target has in the parts file and in the workspace, and the command that goes on."""
    if not targets:
        print("every target's result is in docs/results (--again lists their cells)")
        return 0
    kept = read_parts(parts_file(variant))
    missing = 0
    for target, comp in comparisons(ws, targets, variant, args, None, kept).items():
        plan = comp.plan()
        done = sum(comp.cell_file(row, seed).exists() for row, seed, _ in plan)
        in_file = sum(c["target"] == target for c in kept)
        missing += len(plan) - done
        print(f"{target}: {done} of {len(plan)} cells finished ({in_file} kept in {parts_file(variant).relative_to(ROOT)})")
    if missing:
        print(f"{missing} cells to go; continue with: {command(targets, args)}")
    else:
        print(f"all cells finished; {command(targets, args)} writes the results")
    return 0


def command(targets: list[str], args: argparse.Namespace) -> str:
    return (f"python scripts/crossner_compare_sources.py --target {','.join(targets) if args.target != 'all' else 'all'}"
            f" --seeds {args.seeds} --preset {args.preset}" + (f" --model {args.model}" if args.model != "default" else ""))


def run_target(ws, target: str, variant: str, args: argparse.Namespace) -> None:
    """One target's comparison (its cells finished or restored by `run_cells`: this measures the sources and reads
    the cells) and its JSON docs/results/crossner-compare-T-V.json."""
    from crossner_study import git_commit

    from core.cliutil import tqdm_progress
    from core.runner import jobs

    out = result_file(target, variant)
    params, run_dir = target_params(ws, target, variant, args)
    with tqdm_progress(f"compare-sources {target}", enabled=True) as bar:
        result = jobs.run_inline(ws, "compare-sources", params, run_dir=run_dir, progress=bar)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": command([target], args), **git_commit(),
                               **{k: v for k, v in result.items() if k != "matrix"}}, indent=1) + "\n", "utf-8")
    print(f"wrote {out}")
    for s in result["sources"]:
        print(f"{s['name']:<22} F1 {s['f1_mean']:.4f} ± {s['f1_std']:.4f}  " + "  ".join(f"{m} {s[m]:.4g}" for m in result["measures"]
                                                                                        if s.get(m) is not None))
    print(f"baseline F1 {result['baseline_f1']:.4f}")
    for m, c in result["correlation"].items():
        print(f"r({m}, F1 gain) = {c['r']}, p = {c['p']}, n = {c['n']}")


def finished_earlier(path: Path, seeds: list[int], measures: list[str]) -> str | None:
    """The commit of a target's result JSON (this recipe: its name carries the encoder and preset) when it ran the same
    seeds and measures, so a session that lost its workspace does not run a finished target again; else None."""
    from core.errors import UserError
    from core.experiments.compare import read_comparison

    try:
        done = read_comparison(path)
    except UserError:
        return None
    if done.seeds != seeds or sorted(done.measures) != sorted(measures):
        return None
    return str(done.other.get("commit") or "?")


def pool_results(variant: str) -> None:
    """Pool every target's JSON of this recipe found in docs/results (also those of earlier sessions) into
    docs/results/crossner-compare-pooled-V.json, as `python -m core compare-pool FILES --out ...` does."""
    from core.data.atomic import atomic_write_json
    from core.errors import UserError
    from core.experiments.compare import read_comparison
    from core.similarity.correlation import format_pooled, pool_comparisons

    files = [f for d in DOMAINS if (f := ROOT / "docs" / "results" / f"crossner-compare-{d}-{variant}.json").exists()]
    if len(files) < 2:
        return
    try:
        pooled = pool_comparisons([read_comparison(f) for f in files])
    except UserError as exc:  # e.g. an older target's JSON of other seeds: say so, the per-target JSONs stand
        print(f"not pooled: {exc}", file=sys.stderr)
        return
    out = ROOT / "docs" / "results" / f"crossner-compare-pooled-{variant}.json"
    atomic_write_json(out, {"command": "python -m core compare-pool " + " ".join(str(f.relative_to(ROOT)) for f in files)
                            + f" --out {out.relative_to(ROOT)}", "files": [f.name for f in files], **pooled})
    print(format_pooled(pooled))
    print(f"wrote {out}")


if __name__ == "__main__":
    from core.errors import UserError

    try:
        sys.exit(main())
    except UserError as exc:  # a bad parts file, a corpus the product refuses: one line, nothing half-written
        raise SystemExit(f"error: {exc}") from None
