"""Run commands: `compare-sources` (Dai et al. 2019/2020), `compare-recipes` (issue 46's knobs on a workspace's own task)
and `runs list|show` (lineage)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from core.cliutil import add_workspace_arg, comma_list, out_file, out_folder, print_json, print_warning, progress_wanted, tqdm_progress
from core.data.workspace import Workspace
from core.errors import UserError
from core.recipes.presets import PRESETS
from core.runner.params import CompareSourcesParams, field_default
from core.similarity.measures import PAIRWISE


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = sub.add_parser("compare-sources", formatter_class=fmt,
                       help="MLM on each source, NER on LC, TEST F1, and Pearson r of each similarity measure against the F1 gain")
    p.add_argument("--sources", required=True, help="comma-separated corpora (workspace names, roles or files), at least two")
    p.add_argument("--lc", default=field_default(CompareSourcesParams, "lc"), help="labeled training corpus")
    p.add_argument("--dev", default=field_default(CompareSourcesParams, "dev"), help="labeled corpus for early stopping")
    p.add_argument("--test", default=field_default(CompareSourcesParams, "test"), help="labeled corpus the F1 is measured on")
    p.add_argument("--target", default=field_default(CompareSourcesParams, "target"), help="the target text the sources are compared with")
    p.add_argument("--measures", default=",".join(field_default(CompareSourcesParams, "measures")),
                   help="comma-separated subset of " + ",".join(PAIRWISE))
    p.add_argument("--seeds", default=",".join(map(str, field_default(CompareSourcesParams, "seeds"))),
                   help="comma-separated seeds (each repeats every source and the baseline)")
    p.add_argument("--preset", default=field_default(CompareSourcesParams, "preset"), choices=PRESETS, help="MLM and NER training preset")
    p.add_argument("--model", default=field_default(CompareSourcesParams, "model"), help="base encoder")
    p.add_argument("--out", required=True, type=out_folder, help="run folder (rerun with the same folder to resume)")
    p.add_argument("--allow-dev-in-mlm", action="store_true", dest="allow_dev_in_mlm",
                   help="pretrain on a source that holds DEV sentences (refused by default; recorded in the result)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_compare_sources)

    p = sub.add_parser("compare-pool", formatter_class=fmt,
                       help="pool compare-sources results of several targets: each (source, target) pair's F1 gain and each "
                            "measure's Pearson r against it over all pairs")
    p.add_argument("results", nargs="*", help="compare-sources result JSONs (compare.json of a run folder, or the "
                   "--json output); none: the workspace's finished comparisons of the recipe with most targets, the newest "
                   "per target (as the Results page)")
    p.add_argument("--out", type=out_file, help="also write the pooled result to this JSON file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_compare_pool)

    p = sub.add_parser("compare-recipes", formatter_class=fmt,
                       help="the workspace's experiments run with other MLM settings (experiment --mlm KEY=VALUE) or "
                            "rehearsal, each row against the default recipe's run on the same task: paired difference in "
                            "TEST F1, 95%% CI, p and Holm-adjusted p (as the Results page)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_compare_recipes)

    p = sub.add_parser("runs", help="runs with their lineage (base model, MLM corpora and hashes, selection, LC/DEV/TEST)")
    rsub = p.add_subparsers(dest="runs_cmd", required=True)
    s = rsub.add_parser("list", help="runs of the workspace, newest first")
    s.add_argument("--kind", default=None, choices=("mlm", "ner", "selftrain"), help="only runs of this kind")
    s.add_argument("--json", action="store_true")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_runs_list)
    s = rsub.add_parser("show", help="one run: its lineage, F1 and folders")
    s.add_argument("run", help="run id (or a unique prefix), job id, or a model folder with lineage.json")
    s.add_argument("--json", action="store_true")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_runs_show)
    s = rsub.add_parser("disk", help="disk use of the workspace's corpora, artifacts and run folders, and the MLM snapshots "
                        "that finished runs' checkpoint picks did not choose")
    s.add_argument("--also", action="append", default=[], metavar="FOLDER", help="a run folder outside the workspace "
                   "(an experiment's --out); repeatable")
    s.add_argument("--json", action="store_true")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_runs_disk)
    s = rsub.add_parser("free-snapshots", help="delete the MLM snapshots no checkpoint pick chose, in finished runs "
                        "(the chosen ones, models and results stay; a later pick in such a folder refuses)")
    s.add_argument("--also", action="append", default=[], metavar="FOLDER", help="a run folder outside the workspace; repeatable")
    s.add_argument("--dry-run", action="store_true", help="say what would go, delete nothing")
    s.add_argument("--json", action="store_true")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_runs_free_snapshots)


def cmd_compare_sources(args: argparse.Namespace) -> int:
    from core.experiments.plan import parse_seeds
    from core.runner import jobs

    seeds = parse_seeds(args.seeds, "--seeds")
    params = {"sources": comma_list(args.sources), "lc": args.lc, "dev": args.dev, "test": args.test, "target": args.target,
              "measures": [m.lower() for m in comma_list(args.measures)], "seeds": seeds, "preset": args.preset,
              "model": str(Path(args.model).resolve()) if Path(args.model).exists() else args.model,
              "out": str(Path(args.out).resolve()), "allow_dev_in_mlm": args.allow_dev_in_mlm}
    ws = Workspace(args.workspace)
    with tqdm_progress("compare-sources", enabled=progress_wanted(args)) as bar:
        result = jobs.run_inline(ws, "compare-sources", params, run_dir=Path(args.out).resolve(), progress=bar)
    print_warning(result)
    if args.json:
        print_json({k: v for k, v in result.items() if k != "matrix"})
        return 0
    measures = result["measures"]
    print(f"target {result['target']}; baseline (no pretraining) F1 {result['baseline_f1']:.4f}")
    print(f"{'source':<20} {'F1 mean':>8} {'std':>7} " + " ".join(f"{m:>10}" for m in measures))
    for s in result["sources"]:
        print(f"{s['name']:<20} {s['f1_mean']:>8.4f} {s['f1_std']:>7.4f} "
              + " ".join(f"{s[m]:>10.4g}" if s.get(m) is not None else f"{'-':>10}" for m in measures))
    for m, c in result["correlation"].items():
        print(f"r({m}, F1 gain) = {c['r']:.3f} (p = {c['p']:.3g}, n = {c['n']})" if c["r"] is not None
              else f"r({m}, F1 gain): {c.get('reason', 'undefined')}")
    return 0


def cmd_compare_pool(args: argparse.Namespace) -> int:
    from core.data.atomic import atomic_write_json
    from core.experiments.compare import collect_comparisons, read_comparison
    from core.similarity.correlation import default_pool, format_pooled, pool_comparisons

    if args.results:
        results = [read_comparison(f) for f in args.results]
    else:  # the workspace's: one recipe, the newest run per target, as the Results page pools by default
        results = default_pool(collect_comparisons(Workspace(args.workspace)))
        if results and not args.json:
            print("pooled from the workspace: " + "; ".join(r.label for r in results))
    pooled = pool_comparisons(results)
    if args.out:
        atomic_write_json(Path(args.out), pooled)
    if args.json:
        print_json(pooled)
        return 0
    print(format_pooled(pooled))
    return 0


def cmd_compare_recipes(args: argparse.Namespace) -> int:
    from core.experiments.decision import variant_comparisons
    from core.experiments.experiment import collect_results

    made = variant_comparisons(collect_results(Workspace(args.workspace)))
    rows = made.rows()
    if args.json:
        print_json({"comparisons": rows, "unpaired": made.unpaired, "without_default": made.without_default,
                    "without_recipe": made.without_recipe})
        return 0
    if not rows:
        print("no recipe variant has run beside its default recipe in this workspace: run `experiment` again with "
              "--mlm KEY=VALUE (e.g. --mlm lr=5e-5) and the same corpora, rows and seeds")
    for r in rows:
        holm = "–" if r["p_holm"] is None else f"{r['p_holm']:.3f}"
        print(f"{r['variant']:<28} {r['domain']:<12} {r['row']:<14} {r['seeds']} seed{'s' * (r['seeds'] != 1)}  {r['difference']:+.2f} "
              f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]  p {r['p']:.3f}  Holm {holm}  {r['verdict']}")
    for line in made.unpaired:
        print(f"not compared: {line}")
    for line in made.without_default:
        print(f"no run of its default recipe here to compare with: {line}")
    if made.without_recipe:
        print(f"left out, their recipe unrecorded (run folders from before recipe.json): {', '.join(made.without_recipe)}")
    return 0


def _folders(also: list[str]) -> list[Path]:
    """--also folders, each one that exists (a mistyped one is said, not counted as holding nothing)."""
    if missing := [p for p in also if not Path(p).is_dir()]:
        raise UserError(f"--also: no such folder {', '.join(map(repr, missing))}")
    return [Path(p) for p in also]


def cmd_runs_list(args: argparse.Namespace) -> int:
    from core.train.lineage import list_runs

    entries = list_runs(Workspace(args.workspace), args.kind)
    if args.json:
        print_json([e.to_dict() for e in entries])
        return 0
    for e in entries:
        src = e.pretraining_source
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created))
        f1 = f"F1 {e.f1:.4f}" if e.f1 is not None else ""
        print(f"{e.id:<40} {e.kind or '-':<5} {when}  {src['name'] if src else '(no MLM)':<24} {f1}")
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from core.train.lineage import describe_run, get_run

    entry = get_run(Workspace(args.workspace), args.run)
    if args.json:
        print_json(entry.to_dict())
        return 0
    shown = describe_run(entry)  # the same three tables the Runs page draws
    width = max(len(k) for k, _ in shown["facts"])
    for field, value in shown["facts"]:
        print(f"{field:<{width}}  {value}")
    for p in shown["phases"]:
        print(f"MLM {p['phase']}: {p['corpus']} ({p['hash']})" + (f", sentences: {p['sentences']}" if p["sentences"] else ""))
    if not shown["phases"]:
        print("MLM: none (NER straight from the base model)" if entry.kind == "ner" else "MLM: none")
    for d in shown["data"]:
        print(f"{d['role']} {d['corpus']} ({d['hash']})" + (f", sentences: {d['sentences']}" if d["sentences"] else ""))
    return 0


def cmd_runs_disk(args: argparse.Namespace) -> int:
    from core.experiments.disk import disk_use, format_disk_use

    report = disk_use(Workspace(args.workspace), _folders(args.also))
    if args.json:
        print_json(report)
        return 0
    print(format_disk_use(report))
    return 0


def cmd_runs_free_snapshots(args: argparse.Namespace) -> int:
    from core.experiments.disk import format_freed, free_snapshots

    result = free_snapshots(Workspace(args.workspace), _folders(args.also), dry_run=args.dry_run)
    if args.json:
        print_json(result)
        return 0
    print(format_freed(result))
    return 0
