"""Issue 26's ablation table: MLM recipe variant x CrossNER domain, from the result JSONs of scripts/crossner_study.py.

Per (variant, domain): TEST F1 of no pretraining, TAPT and each selection with its 95% CI over seeds and test
sentences, each pretraining row's paired difference against none and against TAPT (CI, p), how often checkpoint
pick kept the base encoder, and how far MLM moved the encoder (linear CKA of TC sentence embeddings, 1 = unchanged).
Then, per variant, the issue's criterion: on how many domains TAPT >= none and the best selection >= TAPT (the paired
difference's point estimate, over the seeds both rows ran; the intervals say how sure).

The `none` row does not depend on the MLM recipe, so a variant run may leave it out (`--rows tapt,dsir,cosine`) and
borrow it from another result of the same domain, protocol, encoder, preset, NER settings, seeds and device: the
paired tests are then recomputed from both runs' kept TEST predictions (same-code reruns of `none` are bit-identical
on one machine), and the table says where `none` came from.

    python scripts/ablation_table.py docs/results/crossner-*-ci.json docs/results/crossner-*-pick.json \\
        --out docs/results/ablation.json      # also writes ablation.md beside it

docs/results/ablation.{json,md} themselves are made by `python scripts/report.py`, over every study JSON and plan.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "scripts"))  # study_plans; appended, so a script never shadows a package

LOWER_IS_WORSE = 1e-9  # "TAPT >= none" on point estimates: equal counts as not worse
TEST_FIELDS = ("delta", "ci", "p", "p_holm", "seeds")  # what the table keeps of a paired test (seeds: a claim needs 3)


def _seeds(cells: list[dict[str, Any]], row: str) -> list[int]:
    return sorted(c["seed"] for c in cells if c["row"] == row)


def borrow_none(result: dict[str, Any], others: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """The result's cells, with `none` cells taken from another result of the same domain, protocol (its DEV and TEST)
    and of a recipe that trains `none` the same way (encoder, preset, NER settings: plan.NONE_RECIPE_FIELDS), whose
    `none` cells ran alike (records.ran_alike: device and precision), when it ran none itself for none of its seeds.
    Returns (cells, the file none came from or None)."""
    from core.experiments.plan import NONE_RECIPE_FIELDS, recipe_differences, recipe_of
    from core.experiments.records import ran_alike

    cells = list(result.get("cells") or [])
    if any(c["row"] == "none" for c in cells):
        return cells, None
    seeds = sorted({c["seed"] for c in cells})
    mine = recipe_of(result["params"], NONE_RECIPE_FIELDS)
    for other in others:
        if other is result or other["domain"] != result["domain"] or protocol_of(other) != protocol_of(result) \
                or recipe_differences(mine, recipe_of(other["params"], NONE_RECIPE_FIELDS)):
            continue
        donor = [c for c in other.get("cells") or [] if c["row"] == "none" and c["seed"] in seeds]
        if sorted(c["seed"] for c in donor) == seeds and ran_alike(donor) == ran_alike(cells):
            return cells + donor, other["_file"]
    return cells, None


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def domain_entry(result: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
    """One (variant, domain) entry: every row's F1 with CI and paired differences, pick and drift."""
    from core.experiments.plan import recipe_label  # encoder, preset, MLM/NER overrides, rehearsal, pick: one label
    from core.experiments.summary import dev_deltas, interval_summary, is_selection, report_summary

    cells, none_from = borrow_none(result, others)
    dev = dev_deltas(cells)
    # a stored summary from before Holm gets it here as in README (core.experiments.summary.report_summary): a star
    # reads the adjusted p, never the raw one
    summary = interval_summary(cells) if none_from or not result.get("summary") else report_summary(result)[0]
    if none_from:  # a row whose cells lack their TEST counts cannot be paired with the borrowed none any more: it keeps
        # the interval and tests its own file computed when its predictions existed, and has none against none
        stored = {e["row"]: e for e in result.get("summary") or []}
        summary = [{**e, "f1_ci": stored[e["row"]].get("f1_ci"), "vs": stored[e["row"]].get("vs") or {}}
                   if e.get("f1_ci") is None and e["row"] in stored else e for e in summary]
    rows: dict[str, Any] = {}
    for e in summary:
        row = e["row"]
        mine = [c for c in cells if c["row"] == row]
        picks = [c["pick"] for c in mine if c.get("pick")]
        drifts = [c["drift"] for c in mine if c.get("drift")]
        rows[row] = {"f1_mean": e["f1_mean"], "f1_ci": e.get("f1_ci"), "seeds": _seeds(cells, row),
                     "vs": {b: {k: t[k] for k in TEST_FIELDS if k in t} for b, t in (e.get("vs") or {}).items()},
                     "pick_kept_base": sum(not p["helped"] for p in picks) if picks else None, "picks": len(picks) or None,
                     "picked": [p["chosen"] for p in picks] or None,
                     # what the short DEV probe promised (chosen checkpoint over the base encoder): set against
                     # dev_vs_none and TEST, it shows how far the probe's ranking carries to the full fine-tune
                     "probe_gain": _mean([p["gain_over_base"] for p in picks if "gain_over_base" in p]),
                     "drift_cka": _mean([d["cka"] for d in drifts]), "drift_cosine": _mean([d["cosine"] for d in drifts]),
                     "dev_vs_none": _mean(dev.get(row, []))}  # converged DEV F1 minus none's, same seed
    selections = [r for r in rows if is_selection(r)]
    best = max(selections, key=lambda r: rows[r]["f1_mean"], default=None)
    tapt, none = rows.get("tapt"), rows.get("none")
    protocol = protocol_of(result)  # a v1 result (DEV text in TC) and a v2 one of the same recipe are two variants
    from core.experiments.records import ran_alike

    return {"variant": recipe_label(result["params"]) + ("" if protocol == "v1" else f" [{protocol}]"),
            "protocol": protocol, "domain": result["domain"], "ran": list(ran_alike(cells)), "file": result["_file"],
            "none_from": none_from, "finished": bool(result.get("finished")), "command": result.get("command"),
            "commit": result.get("commit"), "rows": rows, "best_selection": best,
            "tapt_ge_none": None if not (tapt and none) else _not_worse(tapt, none, "none"),
            "best_ge_tapt": None if not (best and tapt) else _not_worse(rows[best], tapt, "tapt")}


def _not_worse(row: dict[str, Any], base_row: dict[str, Any], base: str) -> bool:
    """`row` >= `base_row` on the paired difference (the seeds both ran) where there is one, else on the means: in a
    partial run the two means are over different seeds and can disagree with the paired difference in sign."""
    paired = (row.get("vs") or {}).get(base) or {}
    if paired.get("delta") is not None:
        return paired["delta"] >= -LOWER_IS_WORSE
    return row["f1_mean"] >= base_row["f1_mean"] - LOWER_IS_WORSE


def protocol_of(result: dict[str, Any]) -> str:
    """The study protocol a result was made under (core.experiments.study.PROTOCOLS): results from before the
    protocol was recorded are v1."""
    protocol = result.get("protocol")
    return str(protocol["name"]) if isinstance(protocol, dict) and protocol.get("name") else "v1"


def decision(results: list[dict[str, Any]], protocol: str = "v2") -> dict[str, Any]:
    """Issue 46's decision rule (core.experiments.decision) over the knob variants run under `protocol`."""
    from core.experiments.decision import NEEDED_DOMAINS, NEW_ROWS, RunOfRecipe, decide, decide_row

    mine = [r for r in results if protocol_of(r) == protocol]
    runs = [RunOfRecipe.of(r) for r in mine]
    made = decide(runs)

    def new_row(name: str) -> dict[str, Any]:
        row = decide_row(runs, name)
        # per domain: the mean over the row's selections, or the first seed's in a JSON from before (no "parts")
        precision = {r["domain"]: {"value": dp["domain_precision"], "selections": dp.get("parts")}
                     for r, run in zip(mine, runs) if not run.knob
                     if "domain_precision" in (dp := (r.get("domain_precision") or {}).get(name, {}))}
        return {**{k: v for k, v in vars(row).items() if k != "tests"}, "sentence": row.sentence(),
                "tests": [vars(t) for t in row.tests], "domain_precision": precision}

    return {"protocol": protocol, "needed_domains": NEEDED_DOMAINS, "sentence": made.sentence(),
            "knobs": [vars(k) for k in made.knobs], "tests": [vars(t) for t in made.tests], "unpaired": made.unpaired,
            "new_rows": [new_row(name) for name in NEW_ROWS]}


def drift_gain(results: list[dict[str, Any]], protocol: str = "v2") -> dict[str, Any]:
    """How far MLM moved the encoder against what it gained over none (core.experiments.drift_gain), under `protocol`."""
    from core.experiments.decision import RunOfRecipe
    from core.experiments.drift_gain import drift_and_gain

    return {"protocol": protocol, **drift_and_gain([RunOfRecipe.of(r) for r in results if protocol_of(r) == protocol])}


def _one_per_cell(entries: list[dict[str, Any]], results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One entry per (variant, domain, device and precision): the run with kept predictions (intervals) first, then
    the one written last. The others (older reruns of the same recipe) are named, not counted twice. A CPU run of a
    recipe beside its GPU run is a run of its own (records.ran_alike: their cells never pair), kept and labelled."""
    from core.experiments.decision import ways_text

    written = {r["_file"]: r.get("written", "") for r in results}
    best: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
    for e in entries:
        key = (e["variant"], e["domain"], tuple(e.get("ran") or ()))
        rank = (all(v.get("f1_ci") for v in e["rows"].values()), e["finished"], written[e["file"]])
        if key not in best or rank > best[key]["_rank"]:
            best[key] = {**e, "_rank": rank}
    kept = [{k: v for k, v in e.items() if k != "_rank"} for e in best.values()]
    ways: dict[tuple[str, str], set[tuple[str, ...]]] = {}
    for variant, domain, ran in best:
        ways.setdefault((variant, domain), set()).add(ran)
    for e in kept:  # "music on cpu (fp32)" only where the same recipe and domain also ran another way
        twice = len(ways[e["variant"], e["domain"]]) > 1
        e["label"] = e["domain"] + (f" on {ways_text(e['ran'])}" if twice else "")
    files = {e["file"] for e in kept}
    return kept, sorted(e["file"] for e in entries if e["file"] not in files)


def is_study_result(data: Any) -> bool:
    """A result JSON of scripts/crossner_study.py (docs/results also holds the source comparisons and coverage)."""
    return isinstance(data, dict) and str(data.get("study", "")).startswith("CrossNER selective pretraining")


def build(paths: list[Path], command: str = "", plans: list[Path] | None = None) -> dict[str, Any]:
    """The table from result JSONs; with `plans` (scripts/plans/*.plan), also what those plans still have to run
    (scripts/study_plans.py), counted from the same docs/results."""
    results = []
    for path in paths:
        r = json.loads(path.read_text("utf-8"))
        if not is_study_result(r):
            print(f"skipped {path.name}: not a result of scripts/crossner_study.py", file=sys.stderr)
            continue
        if not r.get("cells") or r["params"].get("preset") == "tiny":
            continue  # a study that has not finished a cell yet, or a smoke run
        r["_file"] = str(path.relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)
        results.append(r)
    entries, superseded = _one_per_cell([domain_entry(r, results) for r in results], results)
    entries.sort(key=lambda e: (e["variant"], e["label"]))
    criterion: dict[str, dict[str, Any]] = {}
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}  # a domain run two ways (GPU, CPU) counts once
    for e in entries:
        c = criterion.setdefault(e["variant"], {"domains": [], "tapt_ge_none": 0, "best_ge_tapt": 0, "both": 0,
                                                "cannot_say": []})
        c["domains"].append(e["label"] + ("" if e["finished"] else " (partial)"))
        if e["tapt_ge_none"] is None or e["best_ge_tapt"] is None:  # a run without none (and none to borrow), TAPT or a selection
            c["cannot_say"].append(e["label"])
        runs.setdefault((e["variant"], e["domain"]), []).append(e)
    for (variant, _), both_ways in runs.items():  # ... and meets a criterion only where every run of it does
        c = criterion[variant]
        c["tapt_ge_none"] += all(e["tapt_ge_none"] for e in both_ways)
        c["best_ge_tapt"] += all(e["best_ge_tapt"] for e in both_ways)
        c["both"] += all(e["tapt_ge_none"] and e["best_ge_tapt"] for e in both_ways)
    import study_plans

    kept = {e["file"] for e in entries}
    return {"what": "issue 26 ablation: recipe variant x CrossNER domain (TEST F1, 95% CI over seeds and test sentences; "
                    "paired differences vs none and vs TAPT)",
            "command": command, "entries": entries, "superseded": superseded,
            "criterion": criterion, "decision": decision([r for r in results if r["_file"] in kept]),
            "drift_gain": drift_gain([r for r in results if r["_file"] in kept]),
            "left": study_plans.plans_left(plans) if plans else []}


def _f1(row: dict[str, Any] | None) -> str:
    if not row:
        return "–"
    ci = row.get("f1_ci")
    text = f"{100 * row['f1_mean']:.2f}" + (f" [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else "")
    return text + (f" ({len(row['seeds'])} seed{'s' if len(row['seeds']) != 1 else ''})" if len(row["seeds"]) < 3 else "")


def _vs(row: dict[str, Any] | None, base: str) -> str:
    t = (row or {}).get("vs", {}).get(base)
    if not t:
        return "–"
    # the star follows the Holm-adjusted p (every comparison of its run in one family); a test kept from a file with
    # no counts to recompute it and no adjusted p shows its raw p, marked "raw", and is never starred
    from core.experiments.summary import claim_mark, p_value

    adjusted = t.get("p_holm")
    p = f"p {p_value(t['p'])}" + (f" (Holm {p_value(adjusted)})" if adjusted is not None else " raw")
    star = claim_mark(t) if adjusted is not None else ""
    return f"{100 * t['delta']:+.2f} [{100 * t['ci'][0]:+.2f}, {100 * t['ci'][1]:+.2f}] {p}{star}"


def _dev(row: dict[str, Any] | None, key: str = "dev_vs_none") -> str:
    d = (row or {}).get(key)
    return "–" if d is None else f"{100 * d:+.2f}"


def markdown(table: dict[str, Any]) -> str:
    head = ["variant", "domain", "none", "TAPT", "TAPT vs none", "best selection", "best vs none", "best vs TAPT",
            "DEV vs none (TAPT, best)", "probe gain (TAPT, best)", "pick kept base", "CKA (TAPT)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in table["entries"]:
        rows, best = e["rows"], e["best_selection"]
        picks = [(r, v) for r, v in rows.items() if v.get("picks")]
        kept = ", ".join(f"{r} {v['pick_kept_base']}/{v['picks']}" for r, v in picks) or "–"
        cka = (rows.get("tapt") or {}).get("drift_cka")
        cells = [e["variant"], e.get("label", e["domain"]) + ("" if e["finished"] else " (partial)"),
                 _f1(rows.get("none")) + (" †" if e["none_from"] else ""), _f1(rows.get("tapt")),
                 _vs(rows.get("tapt"), "none"), f"{best}: {_f1(rows[best])}" if best else "–", _vs(rows.get(best), "none"),
                 _vs(rows.get(best), "tapt"), " / ".join(_dev(rows.get(r)) for r in ("tapt", best)),
                 " / ".join(_dev(rows.get(r), "probe_gain") for r in ("tapt", best)), kept,
                 f"{cka:.3f}" if cka is not None else "–"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Points of TEST F1, mean over seeds [95% CI]; differences are paired (same seeds and test sentences), * "
              "Holm-adjusted p < 0.05 over every comparison of that run (\"raw\": a test kept from a file with no "
              "counts to adjust it with, never starred). DEV vs none: converged DEV F1 minus none's of the same seed (mean), "
              "the signal a user has without TEST. Probe gain: the short (8-epoch) DEV probe's score of the chosen "
              "checkpoint minus the base encoder's (mean), what checkpoint pick saw when it chose. \"best selection\" is "
              "the selection row with the highest mean (chosen after the fact: read its interval). † none borrowed from "
              "another run of the same domain, protocol, encoder, preset, NER settings, seeds and device. A row marked (n seeds) "
              "ran fewer seeds than the others so far (a partial run): its mean and theirs are over different seeds, so read "
              "the paired difference, over the seeds both ran; the counts below use it too. The counts below are of point "
              "estimates, untested (the seed paper's criterion, as a description): no domain in them is a finding "
              "unless its row above is starred; the decision rule after them reads Holm-adjusted p only.", "",
              "| variant | domains | TAPT >= none (point estimate) | best selection >= TAPT (point estimate) | both | "
              "cannot say (no none, TAPT or selection yet) |",
              "|---|---|---|---|---|---|"]
    for variant, c in table["criterion"].items():
        lines.append(f"| {variant} | {', '.join(c['domains'])} | {c['tapt_ge_none']} | {c['best_ge_tapt']} | {c['both']} | "
                     f"{', '.join(c.get('cannot_say') or []) or '–'} |")
    lines += _decision_lines(table["decision"])
    lines += _drift_lines(table.get("drift_gain"))
    import study_plans

    lines += study_plans.markdown(table.get("left") or [])
    lines += ["", "Made by:", "", f"    {table['command']}", "", "from the study results made by:", ""]
    for e in table["entries"]:  # a merged result (--merge) names each part's command
        lines += [f"    {c}" for c in (e.get("command") if isinstance(e.get("command"), list) else [e.get("command")]) if c]
    if table.get("superseded"):
        lines += ["", "Older runs of the same recipe and domain, left out: " + ", ".join(table["superseded"]) + "."]
    return "\n".join(lines) + "\n"


def _test_cells(t: dict[str, Any]) -> str:
    """A paired test's table cells: seeds, difference (points), 95% CI, p, Holm p."""
    apart = f" ‡{t['heads_apart']}" if t.get("heads_apart") else ""
    from core.experiments.summary import p_value

    return (f"{len(t['seeds'])}{apart} | {100 * t['delta']:+.2f} | [{100 * t['ci'][0]:+.2f}, {100 * t['ci'][1]:+.2f}] | "
            f"{p_value(t['p'])} | {'–' if t['p_holm'] is None else p_value(t['p_holm'])} |")


def _heads_note(tests: list[dict[str, Any]]) -> list[str]:
    """The footnote for ‡: pairs whose NER heads were drawn differently, and the command that makes them share it."""
    if not any(t.get("heads_apart") for t in tests):
        return []
    return ["", "‡k: at k of the paired seeds the two NER heads were drawn differently (a cell fine-tuned before the "
            "head was seeded after the encoder load, against one since or against a kept base encoder); the difference "
            "then carries the head's luck too (up to 1.5 F1 a cell in the A/A control, docs/results/controls/): "
            "unbiased, but wider than a rerun's. `scripts/crossner_study.py ... --rerun-old-head` runs such cells again."]


NEW_ROW_TEXT = {  # what each of core.experiments.decision.NEW_ROWS does, in the table's words
    "entity-gain": "ranks DC sentences by the entity mentions that B2 finds in them and TC lacks, weighted by LC's type "
                   "shares, mixed with cosine closeness to TC",
    "entity-gain-pool": "ranks by the same entity gain, but only among the DC sentences nearest TC by cosine (a pool "
                        "of three budgets, option pool); the rest follow by cosine",
}


def _domains_run(outcome: dict[str, Any]) -> str:
    """Where a knob ran, a domain still running (more cells to come) marked as such."""
    partial = set(outcome.get("partial", []))
    return ", ".join(d + (" (partial)" if d in partial else "") for d in outcome["domains"])


def _decision_lines(made: dict[str, Any]) -> list[str]:
    """The decision rule's outcome (README, "Reading an experiment, changing the default"), knob by knob."""
    lines = ["", f"**Decision rule (issue 46), protocol {made['protocol']}**: a knob's setting becomes the default only if "
             f"its TAPT or a selection row beats the default recipe's with a Holm-adjusted p < 0.05 on at least "
             f"{made['needed_domains']} of the 5 domains and is significantly worse on no domain. Outcome: {made['sentence']}."]
    if made["knobs"]:
        lines += ["", "| knob | domains run | better | worse | outcome | why |", "|---|---|---|---|---|---|"]
        lines += [f"| {k['knob']} | {_domains_run(k)} | {', '.join(k['better']) or '–'} | "
                  f"{', '.join(k['worse']) or '–'} | {k['outcome']} | {k['reason']} |" for k in made["knobs"]]
        lines += ["", "| knob | domain | row | seeds | variant - default | 95% CI | p | Holm p |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {t['knob']} | {t['domain']} | {t['row']} | {_test_cells(t)}" for t in made["tests"]]
        if any(t["p_holm"] is None for t in made["tests"]):
            lines += ["", "Holm p –: fewer than 3 seeds so far; such a comparison neither counts for the rule nor enters "
                      "the Holm family."]
        lines += _heads_note(made["tests"])
    if made.get("unpaired"):
        lines += ["", "Not compared (the variant and its default ran on different devices or precisions): "
                  + "; ".join(made["unpaired"]) + "."]
    for new in made.get("new_rows") or []:
        lines += ["", f"**The entity-aware strategy (issue 46), protocol {made['protocol']}**: `{new['row']}` "
                  f"{NEW_ROW_TEXT[new['row']]}. It is kept only if it beats the random draw of the same budget with "
                  f"a Holm-adjusted p < 0.05 on at least {made['needed_domains']} of the 5 domains and is significantly "
                  f"worse than it on no domain; cosine, dsir and ner are shown beside. Outcome: {new['sentence']}."]
        if new["tests"]:
            lines += ["", f"| domain | {new['row']} minus | seeds | difference | 95% CI | p | Holm p |",
                      "|---|---|---|---|---|---|---|"]
            lines += [f"| {t['domain']} | {t['knob']} | {_test_cells(t)}" for t in new["tests"]]
            lines += _heads_note(new["tests"])
            shown = sorted(new["domain_precision"].items())
            lines += ["", "Domain precision of its selections (share of the target domain's sentences; the mean over a "
                      "domain's k selections where marked ×k, else its first seed's alone): "
                      + ", ".join(f"{d} {v['value']:.2f}" + (f" ×{v['selections']}" if v["selections"] else "")
                                  for d, v in shown) + "."]
    return lines


def _r(stats: dict[str, Any]) -> str:
    """A Pearson r with its interval, or why there is none."""
    if stats.get("r") is None:
        return "–" + (f" ({stats['reason']})" if stats.get("reason") else "")
    ci = stats.get("r_ci")
    return f"{stats['r']:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")


def _drift_lines(made: dict[str, Any] | None) -> list[str]:
    """Drift against gain (issue 46: does holding the encoder near its start matter?), core.experiments.drift_gain."""
    if not made or not made["moved"]["within"]["n"]:
        return []
    moved, seeded = made["moved"], made["seeded_head"]
    lines = ["", f"**Drift and gain, protocol {made['protocol']}**: Pearson r between the CKA to the base encoder of "
             "the encoder an MLM cell fine-tuned (1 = unchanged) and its TEST F1 minus none's on the same seed, over "
             "every recipe of a domain, for the cells whose encoder moved. A negative r says more drift went with more "
             "gain, a positive r that holding the encoder near its start paid. Within domains, each domain's points are "
             "centred on its own means first, and the interval resamples domains and seeds crosswise (a domain's cells "
             "of one seed share none); a domain's own interval resamples its cells and describes, it does not test. "
             "Old-head cells (‡ above) carry the NER head's luck in their gain, which pulls r toward 0: the last "
             "columns leave them out.", "",
             "| domain | cells | r [95% CI] | cells, seeded head | r, seeded head |", "|---|---|---|---|---|"]
    for d, stats in moved["per_domain"].items():
        mine = seeded["per_domain"].get(d, {"n": 0})
        lines.append(f"| {d} | {stats['n']} | {_r(stats)} | {mine['n']} | {_r(mine) if mine['n'] else '–'} |")
    lines.append(f"| within domains | {moved['within']['n']} | {_r(moved['within'])} | {seeded['within']['n']} | "
                 f"{_r(seeded['within']) if seeded['within']['r'] is not None else '– (needs two domains)'} |")
    left = made["left_out"]
    out = [f"{left['kept_base']} cells that kept the base encoder (none's encoder: they say nothing of drift)"]
    if left["unknown"]:
        out.append(f"{left['unknown']} cells whose pick chose an earlier snapshot, whose own drift only cells run since "
                   "issue 46 record (not a random set: their end of run scored worse on DEV than that snapshot)")
    if left["no_none"]:
        out.append(f"{left['no_none']} cells with no none of the same seed and machine")
    return lines + ["", "Left out: " + "; ".join(out) + "."]


def as_json(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=2, default=float) + "\n"


def build_parser() -> argparse.ArgumentParser:
    """The table's arguments; report.py --check reads the command ablation.json records with it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", help="result JSONs of scripts/crossner_study.py")
    parser.add_argument("--out", help="write the table as JSON here and as Markdown beside it (.md); default: print only")
    parser.add_argument("--plans", nargs="+", type=Path, default=[], metavar="PLAN",
                        help="study plans (scripts/plans/*.plan): say what they still have to run")
    return parser


def main(argv: list[str] | None = None) -> int:
    from core.errors import UserError

    args = build_parser().parse_args(argv)
    missing = [p for p in [*args.results, *map(str, args.plans)] if not Path(p).is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    argv = sys.argv[1:] if argv is None else argv
    try:
        table = build([Path(p).resolve() for p in args.results], " ".join(["python scripts/ablation_table.py", *argv]),
                      args.plans)
    except UserError as exc:  # a plan that does not read
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = markdown(table)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(as_json(table), "utf-8")
        out.with_suffix(".md").write_text(text, "utf-8")
        print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
