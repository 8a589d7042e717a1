"""The CrossNER study table with its uncertainty, from the result JSONs that scripts/crossner_study.py writes:
per row and domain, TEST F1 with its 95% CI, and the paired difference against TAPT, against no pretraining and, for
a selection strategy when the study ran the random control, against random, with its CI, p-value and Holm-adjusted p,
marked as every table marks a claim (core.experiments.summary.claim_mark: Holm p < 0.05 over 3+ seeds). A summary from
before Holm gets it from its stored p (summary.apply_holm). It prints Markdown (README, closing notes) and writes
nothing.

--long puts one line per domain and row (readable with five domains).

Usage: python scripts/study_table.py [--long] docs/results/crossner-music-ci.json docs/results/crossner-politics-ci.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ORDER = ("none", "tapt", "dapt", "tapt+dapt")


def _pp(x: float) -> str:
    return f"{100 * x:+.2f}"


def cell_text(entry: dict[str, Any]) -> str:
    lo, hi = entry["f1_ci"]
    seeds = entry.get("seeds", 0)
    return f"{100 * entry['f1_mean']:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]" + (" (1 seed)" if seeds == 1 else "")


def versus_text(entry: dict[str, Any], base: str) -> str:
    """'+1.20 [+0.20, +2.00], p 0.030 (Holm 0.060)' with the summary's claim mark; an untested control says why."""
    from core.experiments.summary import p_text

    t = (entry.get("vs") or {}).get(base)
    if t is None:
        why = (entry.get("untested") or {}).get(base)
        return f"not tested: {why}" if why else "–"
    lo, hi = t["ci"]
    return f"{_pp(t['delta'])} [{_pp(lo)}, {_pp(hi)}], {p_text(t)}"


def table(paths: list[Path], long: bool = False) -> str:
    """Rows down and each domain's columns across, or with `long` one line per domain and row (domain, row, F1,
    the paired tests): what stays readable with five domains."""
    from core.experiments.statistics import MIN_CLAIM_SEEDS
    from core.experiments.summary import report_summary

    results = [json.loads(p.read_text("utf-8")) for p in paths]
    for r in results:
        r["summary"] = report_summary(r)[0]  # recomputed where the cells kept TEST counts
    rows: list[str] = []
    for r in results:
        for e in r.get("summary") or []:
            if e["row"] not in rows:
                rows.append(e["row"])
    rows.sort(key=lambda r: (ORDER.index(r) if r in ORDER else len(ORDER), r))
    # the random control's column only where a selection was held against it (core.experiments.summary.CONTROL_ROW)
    bases = ("tapt", "none") + (("random",) if any("random" in (e.get("vs") or {}) for r in results
                                                   for e in r.get("summary") or []) else ())

    def entry(r: dict[str, Any], row: str) -> dict[str, Any] | None:
        return next((e for e in r.get("summary") or [] if e["row"] == row), None)

    if long:
        head = ["domain", "row", "test F1 [95% CI]"] + [f"vs {b}" for b in bases]
        body = [[r["domain"], row, cell_text(e)] + [versus_text(e, b) for b in bases]
                for r in results for row in rows if (e := entry(r, row))]
    else:
        head = ["row"] + [f"{r['domain']}: test F1 [95% CI]" for r in results] + \
            [f"{r['domain']}: vs {b}" for r in results for b in bases]
        body = []
        for row in rows:
            entries = [entry(r, row) for r in results]
            body.append([row] + [cell_text(e) if e else "–" for e in entries]
                        + [versus_text(e, b) if e else "–" for e in entries for b in bases])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(b) + " |" for b in body]
    seeds = ", ".join(f"{r['domain']} {sorted({c['seed'] for c in r.get('cells', [])})}" for r in results)
    lines.append("")
    lines.append(f"Seeds: {seeds}. Points of test F1; * Holm-adjusted p < 0.05 over {MIN_CLAIM_SEEDS}+ seeds. Method: "
                 + (results[0].get("summary") or [{}])[0].get("ci_method", "bootstrap") + "; paired tests over the same "
                 "resampled seeds and sentences.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    long = "--long" in argv
    argv = [a for a in argv if a != "--long"]
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    missing = [a for a in argv if not Path(a).is_file()]
    if missing:
        print(f"error: no such result file: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(table([Path(a) for a in argv], long=long))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
