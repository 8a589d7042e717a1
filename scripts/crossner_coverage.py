"""Why selection did or did not beat TAPT in the CrossNER study (issue 11): entity coverage of TEST.

MLM on TC + SC can only teach the encoder entity words that occur in TC + SC. For each domain this
imports the study corpora as scripts/crossner_study.py does, remakes the study's selections with the
product's own `select` (same TC, DC, budget |TC|, encoder, seeds), and measures with the product's
own `coverage` (core.selection.coverage) how many of TEST's entity words TC holds, how many of the
rest each selection adds ("TC's gap closed"), and the same for TC + all of DC (the dapt row). Each
row is set beside its TEST F1 gain over TAPT and over no pretraining from the study's result JSON.

    python scripts/crossner_coverage.py --domains music,politics   # ~5 min on 2 CPU cores

writes docs/results/crossner-coverage.json. The `ner` row is left out: its selection needs the TAPT
model and a NER model trained on it for every seed (~15 min each on CPU), and its domain precision
is random's (see the study JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from crossner_study import CROSSNER, git_commit, import_study  # noqa: E402

ROWS = ("cosine", "dsir", "random")
SEEDS = (1, 2, 3)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def domain_coverage(domain: str, workspace: Path, seeds: tuple[int, ...]) -> dict[str, Any]:
    from core.data.workspace import Workspace
    from core.experiments.study import crossner_protocol
    from core.selection.coverage import selection_coverage
    from core.selection.strategies import select

    study = crossner_protocol(CROSSNER, domain)
    ws = Workspace(workspace)
    names = import_study(ws, study)
    tc, dc = ws.load_corpus(names["tc"]), ws.load_corpus(names["dc"])
    base = selection_coverage(ws, names["test"], names["tc"], corpora=[names["dc"]])
    rows: dict[str, Any] = {"tc (tapt)": {"words": base.rows[0].words, "mentions": base.rows[0].mentions, "gap_closed": 0.0,
                                          "per_type": base.rows[0].per_type},
                            "tc + dc (dapt)": {"words": base.rows[2].words, "mentions": base.rows[2].mentions,
                                               "gap_closed": base.rows[2].gap_closed, "per_type": base.rows[2].per_type}}
    for row in ROWS:
        parts = []
        for seed in seeds if row != "cosine" else seeds[:1]:  # cosine has no randomness: one selection serves every seed
            sel = select(tc, dc, row, len(tc), seed=seed, workspace=ws, target_domain=domain,
                         names={"tc": names["tc"], "dc": names["dc"]})
            cov = selection_coverage(ws, names["test"], names["tc"], [sel.key])
            both = cov.rows[2]
            parts.append({"seed": seed, "key": sel.key, "domain_precision": sel.domain_precision(domain)["domain_precision"],
                          "words": both.words, "mentions": both.mentions, "gap_closed": both.gap_closed,
                          "sc_words": cov.rows[1].words, "per_type": both.per_type, "adds": cov.added_examples})
        rows[row] = {k: _mean([p[k] for p in parts]) for k in ("domain_precision", "words", "mentions", "gap_closed", "sc_words")}
        rows[row]["per_type"] = {t: _mean([p["per_type"][t] for p in parts]) for t in parts[0]["per_type"]}
        rows[row]["parts"] = parts
    study_json = ROOT / "docs" / "results" / f"crossner-{domain}.json"
    f1 = json.loads(study_json.read_text("utf-8"))["rows"] if study_json.exists() else {}
    row_of = {"tc (tapt)": "tapt", "tc + dc (dapt)": "dapt"}
    for name, values in rows.items():
        r = f1.get(row_of.get(name, name))
        if r and "tapt" in f1 and "none" in f1:
            values.update(test_f1=r["mean"], test_f1_std=r["std"], gain_vs_tapt=r["mean"] - f1["tapt"]["mean"],
                          gain_vs_none=r["mean"] - f1["none"]["mean"])
    return {"domain": domain, "test_mentions": base.mentions, "test_entity_words": base.entity_words,
            "missing_from_tc": base.missing_from_tc, "dc_adds_examples": base.added_examples.get(names["dc"], []),
            "rows": rows, "f1_from": str(study_json.relative_to(ROOT)) if study_json.exists() else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domains", default="music,politics")
    parser.add_argument("--seeds", default="1,2,3", help="seeds of the dsir and random selections (the study's)")
    parser.add_argument("--workspace", help="folder for the study workspaces (default: workspace/ in the checkout)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "crossner-coverage.json"))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    root = Path(args.workspace) if args.workspace else ROOT / "workspace"
    started = time.time()
    result = {"what": "TEST entity-word coverage of each study row's MLM corpus (issue 11)", **git_commit(),
              "command": " ".join([Path(sys.executable).name, *sys.argv]), "seeds": list(seeds), "domains": {}}
    for domain in (d.strip() for d in args.domains.split(",") if d.strip()):
        res = domain_coverage(domain, root / f"study-{domain}", seeds)
        result["domains"][domain] = res
        print(f"\n{domain}: TEST has {res['test_entity_words']:,} distinct entity words in {res['test_mentions']:,} mentions; "
              f"{res['missing_from_tc']:,} are not in TC")
        print(f"{'row':16s} {'dom.prec':>8s} {'words %':>8s} {'mentions %':>10s} {'gap closed %':>12s} {'F1 - tapt':>9s} {'F1 - none':>9s}")
        for name, v in res["rows"].items():
            def pct(x: float | None) -> str:
                return "" if x is None else f"{100 * x:.1f}"
            print(f"{name:16s} {pct(v.get('domain_precision')):>8s} {pct(v['words']):>8s} {pct(v['mentions']):>10s} "
                  f"{pct(v['gap_closed']):>12s} {pct(v.get('gain_vs_tapt')):>9s} {pct(v.get('gain_vs_none')):>9s}")
    result["seconds"] = round(time.time() - started, 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float) + "\n", "utf-8")
    print(f"\nwrote {out} in {result['seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
