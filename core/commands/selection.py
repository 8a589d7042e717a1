"""Embedding, selection and projection commands: embed, select, project."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from core.cliutil import add_workspace_arg, out_file, print_json, progress_wanted, tqdm_progress
from core.data.atomic import temp_path_for
from core.data.neardup import THRESHOLD
from core.data.workspace import Workspace
from core.errors import UserError
from core.recipes.configs import parse_settings
from core.runner.params import ProjectParams, SelectParams, field_default


def register(sub: argparse._SubParsersAction) -> None:
    from core.recipes.strategy_info import Strategy

    p = sub.add_parser("embed", help="sentence embeddings of a corpus (mean of the last layer) as a .npy file")
    p.add_argument("file", help="corpus file or workspace corpus name")
    p.add_argument("--model", default="default", help="'default', a model folder or a Hugging Face id")
    p.add_argument("--out", required=True, type=out_file, help="output .npy (float32, one row per sentence)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--pooling", default="mean", choices=["mean", "model"],
                   help="mean of token activations (paper), or the model's own sentence-transformers pooling")
    p.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="embed on a Ray cluster ('local' starts one on this machine; default: the workspace's Ray setting, else no Ray)")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser("select", help="select sentences of DC for TC with one strategy")
    p.add_argument("--tc", required=True, help="task corpus: file or workspace corpus name")
    p.add_argument("--dc", required=True, help="domain corpus: file or workspace corpus name")
    p.add_argument("--strategy", required=True, choices=[s.value for s in Strategy])
    p.add_argument("--budget", required=True, help="a count (e.g. 5000) or a ratio of DC (e.g. 0.1; 1.0 = all)")
    p.add_argument("--out", required=True, type=out_file, help="output JSONL (one object per selected sentence); .txt or .csv also work")
    p.add_argument("--model", default=field_default(SelectParams, "model"), help="encoder for cosine/knn, B1 for cosine-concat and mlm-ppl")
    p.add_argument("--model2", default=field_default(SelectParams, "model2"), help="B2 (NER fine-tuned) for cosine-concat")
    p.add_argument("--ner-model", default=field_default(SelectParams, "ner_model"), help="fine-tuned NER model folder for strategy ner")
    p.add_argument("--target-domain", default=field_default(SelectParams, "target_domain"),
                   help="domain for domain precision (default: TC's majority domain, else the workspace's target domain)")
    p.add_argument("--seed", type=int, default=field_default(SelectParams, "seed"))
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="strategy option, e.g. sampling=topk, length=chunk, smoothing=dc (dsir), k=10 (knn), order=4 (ppl), "
                        "mix=0.7 (entity-gain: the gain's share), pool=3 (entity-gain-pool: budgets of DC nearest TC that compete), "
                        "dedupe=true (any strategy: pass over sentences repeating one ranked before)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run the embedding / LM-scoring pass on a Ray cluster ('local' starts one on this machine)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("selections", help="the saved selections, newest first: key, strategy and size, corpora (the keys "
                                          "--selection takes); `selections export KEY --out FILE` writes one")
    p.add_argument("--dc", help="only the selections made on this DC (a workspace corpus name)")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_selections)
    ss = p.add_subparsers(dest="selections_command")
    e = ss.add_parser("export", help="a saved selection's sentences as a file (.jsonl, .txt or .csv, by the extension)")
    e.add_argument("selection", help="its key (or the key's start), as `selections` lists it")
    e.add_argument("--out", required=True, type=out_file)
    add_workspace_arg(e)
    e.set_defaults(func=cmd_selections_export)

    p = sub.add_parser("coverage", help="entity words of a labeled corpus found in TC, in saved selections and in TC + each")
    p.add_argument("--labeled", required=True, help="labeled corpus whose entity words are counted (e.g. dev or test)")
    p.add_argument("--tc", required=True, help="task corpus: file or workspace corpus name or role")
    p.add_argument("--selection", action="append", default=[], metavar="KEY",
                   help="saved selection (key or 6+ hex-digit prefix); repeat for several")
    p.add_argument("--source", action="append", default=[], metavar="CORPUS",
                   help="another source corpus (e.g. dc, the whole DC); repeat for several")
    p.add_argument("--json", action="store_true", help="print the full result (per type, added words) as JSON")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_coverage)

    p = sub.add_parser("select-explain", help="why a sentence was selected (also: `select explain SELECTION INDEX`)")
    p.add_argument("selection", help="a saved selection: key, key prefix of 6+ hex digits, or folder")
    p.add_argument("index", type=int, help="the sentence's row index in DC (dc_index)")
    p.add_argument("--labeled", default="test", help="labeled corpus whose entity words are looked for (default: test; '' skips)")
    p.add_argument("--neighbours", type=int, default=5, help="nearest TC sentences shown")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("leakage", help="exact and near duplicates of DEV/TEST sentences in a pretraining corpus (TC, SC, DC)",
                       description="Has evaluation text leaked into pretraining data? Exact duplicates after case folding "
                                   "and dropping punctuation, and near duplicates found by MinHash LSH over word 2-grams and "
                                   "verified by their true Jaccard similarity. An experiment runs the same check on its MLM "
                                   "corpora before training (DEV text in TC refused, DEV/TEST duplicates dropped).",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", required=True, help="the pretraining corpus: workspace name, role, file, or a saved selection key")
    p.add_argument("--against", default="dev,test", help="comma-separated labeled corpora")
    p.add_argument("--threshold", type=float, default=THRESHOLD,
                   help="verified Jaccard of word 2-grams counted as a near duplicate (0.5: one replaced word in a "
                        "6-word sentence still matches)")
    p.add_argument("--examples", type=int, default=50, help="examples listed at most")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_leakage)

    p = sub.add_parser("project", help="the map of a corpus set (UMAP, cosine), computed once and reused; "
                                       "colour a saved selection over it, or save a region or a search")
    p.add_argument("corpora", nargs="*", help="corpus names, roles (tc, dc) or files; default: the --selection's TC and DC, "
                   "else the TC and DC roles")
    p.add_argument("--selection", help="a saved selection: adds its group (TC / selected / filtered) and score per point")
    p.add_argument("--out", type=out_file, help="output .parquet (x, y, corpus, row, text; with --selection also group, score_percentile)")
    p.add_argument("--model", default=field_default(ProjectParams, "model"))
    p.add_argument("--fit-points", type=int, default=field_default(ProjectParams, "fit_points"),
                   help="UMAP is fitted on at most this many sentences; the rest are placed on the fitted map")
    p.add_argument("--seed", type=int, default=field_default(ProjectParams, "seed"))
    p.add_argument("--predictions", metavar="MODEL", help="a fine-tuned NER model whose cached predictions colour the map: "
                                                          "predicted entities (or --measure c1) per sentence")
    p.add_argument("--measure", choices=("entities", "c1"), default="entities", help="with --predictions (default: entities)")
    p.add_argument("--field", metavar="NAME", help="colour by a field the corpora carry (e.g. domain), as the Map's "
                                                    "'field: NAME': counts per value (the rarest folded into 'other', as "
                                                    "on the Map), and every value as it is in a column of --out")
    p.add_argument("--region", help="a region of the map, 'x,y x,y x,y ...' (3+ corners, map coordinates)")
    p.add_argument("--search", help="the sentences holding every word of this query")
    p.add_argument("--save-selection", metavar="DC", help="save the region's / search's sentences of corpus DC as a selection")
    p.add_argument("--save-corpus", metavar="NAME", help="save the region's / search's sentences as a corpus")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_project)


def cmd_embed(args: argparse.Namespace) -> int:
    from core.data.stream import open_corpus_stream
    from core.lm.embed import embed_corpus

    ws = Workspace(args.workspace)
    corpus = open_corpus_stream(ws, args.file)  # a workspace corpus is streamed, never loaded whole
    t0 = time.time()
    with tqdm_progress(f"embed {Path(args.file).name}") as progress:
        vecs = embed_corpus(corpus, args.model, pooling=args.pooling, device=args.device, precision=args.precision,
                            workspace=ws, batch_size=args.batch_size, progress=progress,
                            ray=args.ray or ws.settings().ray_address or None)
    out = Path(args.out)
    tmp = temp_path_for(out)
    arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=vecs.shape)
    for s in range(0, len(vecs), 1 << 16):  # float16 cache -> float32 file, a block at a time
        arr[s:s + (1 << 16)] = vecs[s:s + (1 << 16)]
    arr.flush()
    del arr
    os.replace(tmp, out)
    print(f"wrote {vecs.shape[0]} x {vecs.shape[1]} embeddings to {out} in {time.time() - t0:.1f}s")
    return 0


def cmd_selections(args: argparse.Namespace) -> int:
    """The Selection page's list of saved selections, as text or JSON (core.data.selection_store.list_selections)."""
    from core.data.selection_store import list_selections

    metas = list_selections(Workspace(args.workspace), dc=args.dc)
    if args.json:
        print_json([{**m.to_dict(), "key": m.key, "label": m.label} for m in metas])
        return 0
    if not metas:
        print("no saved selection" + (f" on {args.dc!r}" if args.dc else "") + ": `python -m core select ...` makes one")
    for m in metas:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(m.created)) if m.created else "-"
        print(f"{m.key}  {when}  {m.label}  (TC {m.tc_name or '?'}, DC {m.dc_name or '?'})")
    return 0


def cmd_selections_export(args: argparse.Namespace) -> int:
    """A saved selection written as the Selection page's download is, row by row (Selection.write_export)."""
    from core.data.selection_store import load_selection

    sel = load_selection(Workspace(args.workspace), args.selection)
    out = sel.write_export(args.out)
    print(f"{len(sel.indices):,} sentences of selection {sel.key} ({sel.meta.label}) -> {out}")
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    from core.recipes.budget import Budget
    from core.runner.kinds import validate
    from core.selection.strategies import run_selection

    ws = Workspace(args.workspace)
    budget = Budget.parse(args.budget, "--budget").value  # named as the user typed it
    params = validate("select", {"tc": args.tc, "dc": args.dc, "strategy": args.strategy, "budget": budget,
                                 "model": args.model, "model2": args.model2, "ner_model": args.ner_model,
                                 "target_domain": args.target_domain, "seed": args.seed,
                                 "options": parse_settings(args.option, "--option") or None, "ray": args.ray})
    t0 = time.time()
    with tqdm_progress(f"select {args.strategy}", enabled=progress_wanted(args)) as progress:
        sel = run_selection(ws, params, progress)
    out = Path(args.out)
    sel.write_export(out)  # row by row: flat memory for any budget
    summary = {**sel.summary(), "seconds": time.time() - t0, "out": str(out)}
    if args.json:
        print_json(summary)
    else:
        for note in sel.notes:
            print(f"note: {note}")
        line = f"selected {summary['selected']:,} of {summary['dc_size']:,} DC sentences with {args.strategy} -> {out}"
        if "domain_precision" in summary:
            line += (f"; domain precision for {summary['target_domain']!r}: {summary['domain_precision']:.3f} "
                     f"(random: {summary['random_domain_precision']:.3f})")
        print(line)
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    from core.selection.coverage import selection_coverage

    ws = Workspace(args.workspace)
    cov = selection_coverage(ws, args.labeled, args.tc, args.selection, args.source)
    if args.json:
        print_json(cov.as_dict())
        return 0
    print(f"{cov.labeled}: {cov.mentions:,} entity mentions, {cov.entity_words:,} distinct entity words, "
          f"{cov.missing_from_tc:,} of them not in {args.tc}")
    print(cov.frame().to_string(index=False, float_format=lambda v: f"{v:.1f}", na_rep="-"))
    for name, words in cov.added_examples.items():
        if words:
            print(f"{name} adds e.g.: {', '.join(words)}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from core.selection.explain import explain_sentence

    out = explain_sentence(Workspace(args.workspace), args.selection, args.index, args.labeled or None, args.neighbours)
    if args.json:
        print_json(out)
        return 0
    print(f"DC #{out['dc_index']}: {out['text']}")
    for r in out["ranks"]:
        print(f"  {r['label']}: rank {r['rank']:,} of {r['of']:,} (percentile {r['percentile']:.1f}, "
              f"{'selected' if r['selected'] else 'filtered'})")
    print("  nearest TC: " + " | ".join(f"{n['cosine']:.3f} {n['text'][:60]}" for n in out["nearest_tc"][:3]))
    print(f"  DSIR log-weight {out['dsir']['log_weight']:.3f}; n-grams: "
          + ", ".join(f"{g['ngram']} {g['weight']:+.2f}" for g in out["dsir"]["ngrams"][:6]))
    if "entity_words_added" in out:
        print(f"  entity words of {args.labeled} it adds to TC: {', '.join(out['entity_words_added']['words']) or '(none)'}")
    return 0


def cmd_leakage(args: argparse.Namespace) -> int:
    from core.cliutil import comma_list
    from core.selection.leakage import check_leakage

    ws = Workspace(args.workspace)
    threshold = args.threshold
    with tqdm_progress("leakage", enabled=progress_wanted(args)) as progress:
        report = check_leakage(ws, args.corpus, comma_list(args.against), threshold, progress, args.examples)
    if args.json:
        print_json(report.to_dict(indices=False))
        return 0
    print(f"{report.corpus}: {report.exact:,} exact and {report.near:,} near duplicates (Jaccard >= {threshold}) of "
          f"{args.against} among {report.sentences:,} sentences")
    for ex in report.examples[:10]:
        print(f"  #{ex['corpus_index']} ~ {ex['against']} #{ex['index']} ({ex['similarity']:.2f}): {ex['text'][:100]}")
    return 0


def region_corners(text: str) -> list[list[float]]:
    """'x,y x,y x,y' -> [[x, y], ...]; UserError unless every corner is two numbers and there are 3 or more.

    >>> region_corners("0,0 1,0 0.5,2")
    [[0.0, 0.0], [1.0, 0.0], [0.5, 2.0]]
    """
    said = f"--region: expected at least 3 corners as 'x,y x,y x,y', got {text!r}"
    try:
        corners = [[float(v) for v in corner.split(",")] for corner in text.split()]
    except ValueError:
        raise UserError(said) from None
    if len(corners) < 3 or any(len(c) != 2 for c in corners):
        raise UserError(said)
    return corners


def cmd_project(args: argparse.Namespace) -> int:
    from core.selection.atlas import build_atlas, map_corpora, points_frame
    from core.selection.layers import (
        colour_layer,
        field_values,
        prediction_values,
        selection_layer,
        selection_percentiles,
    )
    from core.selection.map_region import Region, region_rows, save_region_corpus, save_region_selection

    ws = Workspace(args.workspace)
    corpora = map_corpora(ws, args.corpora, args.selection)
    if not corpora:
        raise UserError("name the corpora to map (for example: project tc dc), give --selection, or give corpora the TC and "
                        "DC roles (import --role)")
    if (args.save_selection or args.save_corpus) and not (args.region or args.search):
        raise UserError("--save-selection / --save-corpus save a --region or a --search")
    polygon = region_corners(args.region) if args.region else None  # a typo refused before the map is built
    with tqdm_progress("project", enabled=progress_wanted(args)) as progress:
        atlas, reused = build_atlas(ws, corpora, args.model, fit_points=args.fit_points, seed=args.seed, progress=progress)
    report = {"key": atlas.key, "reused": reused, "points": len(atlas), "method": atlas.meta["method"],
              "seconds": atlas.seconds, "corpora": [{k: c[k] for k in ("name", "sentences")} for c in atlas.corpora],
              "clusters": [c["label"] for c in atlas.clusters]}
    frame = points_frame(atlas) if args.out else None
    if args.selection:
        groups = selection_layer(ws, atlas, args.selection)
        report["selection"] = {"key": args.selection, "groups": groups.counts()}
        if frame is not None:
            labels = np.array([e["label"] for e in groups.legend])
            frame["group"] = labels[groups.codes]
            frame["score_percentile"] = selection_percentiles(ws, atlas, args.selection)[0]
    if args.field:  # the Map page's "field: NAME" colouring, through the same core function
        layer = colour_layer(ws, atlas, f"field: {args.field}")
        report["field"] = {"name": args.field, "values": layer.counts()}
        if frame is not None:  # every value as it is (the counts fold the rare ones into "other", as the Map does)
            frame[f"field_{args.field}"] = field_values(ws, atlas, args.field)
    if args.predictions:
        values = prediction_values(ws, atlas, args.predictions, args.measure)
        ok = np.isfinite(values)
        report["predictions"] = {"model": args.predictions, "measure": args.measure, "points": int(ok.sum()),
                                 "mean": float(values[ok].mean()) if ok.any() else None}
        if frame is not None:
            frame[f"predicted_{args.measure}"] = values
    if args.region:
        how = Region(mode="polygon", polygon=polygon)
    elif args.search:
        how = Region(query=args.search)
    else:
        how = None
    if how is not None:
        mask = how.mask(atlas)
        report["chosen"] = {name: int(len(rows)) for name, rows in region_rows(atlas, mask).items()}
        if frame is not None:
            frame["chosen"] = mask
        if args.save_selection:
            sel = save_region_selection(ws, atlas, mask, args.save_selection, how)
            report["saved_selection"] = {"key": sel.key, "sentences": sel.budget, "dc": args.save_selection}
        if args.save_corpus:
            info = save_region_corpus(ws, atlas, mask, args.save_corpus, how)
            report["saved_corpus"] = {"name": info.name, "sentences": info.sentences}
    if frame is not None:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_path_for(out)
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, out)
        report["out"] = str(out)
    if args.json:
        print_json(report)
        return 0
    print(f"map {atlas.key} of {len(atlas):,} sentences ({'reused' if reused else atlas.meta['method']})")
    for key in ("selection", "field", "predictions", "chosen", "saved_selection", "saved_corpus", "out"):
        if key in report:
            print(f"  {key}: {report[key]}")
    return 0
