"""Every results table and every result number in README.md, generated from the result JSONs (issue 42).

README.md holds generated blocks between `<!-- report:NAME -->` and `<!-- /report:NAME -->`; this script writes
each from docs/results/*.json. Statistics are recomputed from the cells' kept TEST counts (10,000 resamples,
Holm-adjusted over each experiment's comparisons); a result whose cells kept no counts (the first ai and music
runs) is read from its stored summary (1,000 resamples), Holm applied to the stored p-values, and says so.
Stars and words come from the Holm-adjusted p only. The results sections of README (from "## Experiments on
CrossNER" to the next "## ") may hold no decimal number outside a block: a figure typed by hand is flagged.

    python scripts/report.py            # rewrite the blocks in README.md, and docs/results/ablation.{json,md}
    python scripts/report.py --check    # exit 1 naming every block, and every number, that differs from the JSON
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "scripts"))  # ablation_table; appended, so a script never shadows a package
RESULTS = ROOT / "docs" / "results"
README = ROOT / "README.md"
DOMAINS = ("ai", "music", "literature", "science", "politics")
ORDER = ("none", "tapt", "dapt", "tapt+dapt")
BASES = ("tapt", "none", "random")
SECTION = ("## Experiments on CrossNER", "## Running it for a while")
BLOCK = re.compile(r"(<!-- report:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /report:(?P=name) -->)", re.S)
NUMBER = re.compile(r"(?<![\w./-])[−+-]?\d+\.\d+")


# --------------------------------------------------------------------------- reading results


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


def _sorted_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (ORDER.index(e["row"]) if e["row"] in ORDER else len(ORDER), e["row"]))


def pp(x: float) -> str:
    return f"{100 * x:+.2f}".replace("-", "−")


def f1_text(e: dict[str, Any]) -> str:
    if not e.get("f1_ci"):
        return f"{100 * e['f1_mean']:.2f}"
    lo, hi = e["f1_ci"]
    return f"{100 * e['f1_mean']:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]" + (" (DEV in MLM)" if e.get("dev_in_mlm") else "")


def vs_text(e: dict[str, Any], base: str) -> str:
    t = (e.get("vs") or {}).get(base)
    if t is None:
        return "–"
    from core.experiments.summary import claim_mark, p_value

    return f"{pp(t['delta'])} [{pp(t['ci'][0])}, {pp(t['ci'][1])}], p {p_value(t['p'])}, Holm {p_value(t['p_holm'])}{claim_mark(t)}"


# --------------------------------------------------------------------------- blocks


def study_block(paths: list[Path], label: str) -> str:
    from core.experiments.summary import report_summary

    results = [(p, load(p)) for p in paths if p.is_file()]
    if not results:
        return f"No {label} result yet.\n"
    lines = ["| domain | row | test F1 [95% CI] | vs TAPT | vs none | vs random |", "|---|---|---|---|---|---|"]
    notes, says = [], []
    for path, result in results:
        entries, how = report_summary(result)
        cells = result.get("cells") or []
        seeds = sorted({c["seed"] for c in cells})
        for e in _sorted_rows(entries):
            lines.append(f"| {result['domain']} | {e['row']} | {f1_text(e)} | " + " | ".join(vs_text(e, b) for b in BASES) + " |")
        done = "" if result.get("finished") else f", partial: {len(cells)} cell{'s' if len(cells) != 1 else ''} so far"
        notes.append(f"{result['domain']}: `{path.relative_to(ROOT)}`, seeds {seeds}{done}; {ran_on(result)}; {how}")
        says.append(domain_sentence(result, entries))
    return "\n".join(lines + ["", "Sources: " + "; ".join(notes) + ".", "", *says, ""])


def ran_on(result: dict[str, Any]) -> str:
    """Where the cells ran, from their own records: a domain's rows compare among themselves only when they ran alike.

    >>> ran_on({"cells": [{"numerics": {"device": "cuda", "dtype": "bf16", "head_seed": "after-encoder"}}],
    ...         "encoder_note": "fp16-rounded"})
    'ran on cuda (bf16), encoder weights fp16-rounded for the device'
    >>> ran_on({"cells": [{"numerics": {"device": "cuda", "dtype": "bf16"}}]})
    'ran on cuda (bf16), all cells from before the NER head was seeded after the encoder load'
    >>> ran_on({"cells": [{"numerics": {"device": "cpu", "dtype": "fp32", "head_seed": "after-encoder"}}, {}]})
    'ran on cpu (fp32), 1 cell unrecorded'
    """
    from core.experiments.records import ran_alike

    cells = result.get("cells") or []
    ways = ran_alike(cells)
    unknown = sum(1 for c in cells if not c.get("numerics"))
    text = "ran on " + (" and ".join(ways) if ways else "an unrecorded device")
    if ways and unknown:
        text += f", {unknown} cell{'s' if unknown != 1 else ''} unrecorded"
    if result.get("encoder_note"):
        text += ", encoder weights fp16-rounded for the device"
    drawn = sum(1 for c in cells if c.get("numerics") and not c["numerics"].get("head_seed"))
    if drawn:  # issue 46's A/A control: before the reseed, a pretrained row's NER head was not none's of the same seed
        count = "all cells" if drawn == len(cells) else f"{drawn} cell{'s' if drawn != 1 else ''}"
        text += f", {count} from before the NER head was seeded after the encoder load"
    return text


def domain_precision_phrase(precision: dict[str, Any]) -> list[str]:
    """Each selection row's domain precision beside a random draw's expectation. A JSON written before the figure was
    averaged over a row's selections (no `parts`) holds the first seed's only: a seeded row (random, DSIR) draws
    another per seed, so the phrase says so.

    >>> domain_precision_phrase({"dsir": {"domain_precision": 0.5, "random_domain_precision": 0.04, "parts": 3}})
    ["domain precision dsir 0.50 (a random draw's expectation 0.04)"]
    >>> domain_precision_phrase({"dsir": {"domain_precision": 0.5}, "cosine": {"domain_precision": 0.8, "parts": 1}})
    ["domain precision dsir 0.50 (one seed's selection), cosine 0.80"]
    >>> domain_precision_phrase({"dsir": {"domain_precision": 0.5, "parts": 1, "of": 3}})
    ['domain precision dsir 0.50 (1 of 3 selections)']
    >>> domain_precision_phrase({"dsir": {"domain_precision": 0.5}, "cosine": {"domain_precision": 0.8}})
    ["domain precision of the first seed's selections: dsir 0.50, cosine 0.80"]
    """
    shown = {row: v for row, v in precision.items() if "domain_precision" in v}
    if not shown:
        return []
    averaged = [("parts" in v) for v in shown.values()]
    dp = [f"{row} {v['domain_precision']:.2f}" + ("" if "parts" in v or not any(averaged) else " (one seed's selection)")
          + (f" ({v['parts']} of {v['of']} selections)" if v.get("of", 0) > v.get("parts", v.get("of", 0)) else "")
          for row, v in shown.items()]
    rand = next((v.get("random_domain_precision") for v in shown.values() if "random_domain_precision" in v), None)
    head = "domain precision " if any(averaged) else "domain precision of the first seed's selections: "
    return [head + ", ".join(dp) + (f" (a random draw's expectation {rand:.2f})" if rand else "")]


def domain_sentence(result: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """What one domain's table says, in words read from Holm-adjusted p: rows above none, below none, and selection
    against random; the selections' domain precision beside random's."""
    from core.experiments.records import PairTest
    from core.experiments.statistics import MIN_CLAIM_SEEDS
    from core.experiments.summary import CONTROL_ROW

    def rows(base: str, sign: int) -> list[str]:
        return [e["row"] for e in entries if (t := (e.get("vs") or {}).get(base)) and PairTest.of(t).significant
                and t["delta"] * sign > 0]

    if not any(e.get("vs") for e in entries):
        return f"- **{result['domain']}**: no comparison yet (rows so far: {', '.join(e['row'] for e in entries)})."
    up, down = rows("none", 1), rows("none", -1)
    beat, below = rows(CONTROL_ROW, 1), rows(CONTROL_ROW, -1)
    tested = [e["row"] for e in entries if CONTROL_ROW in (e.get("vs") or {})]
    parts = [f"above none: {', '.join(up) if up else 'no row'}"]
    if down:
        parts.append(f"below none: {', '.join(down)}")
    if tested:
        parts.append("selection vs random: " + (f"{', '.join(beat)} above" if beat else "no selection above")
                     + (f", {', '.join(below)} below" if below else ""))
    parts += domain_precision_phrase(result.get("domain_precision") or {})
    return f"- **{result['domain']}** (Holm-adjusted p < 0.05 over {MIN_CLAIM_SEEDS}+ seeds): " + "; ".join(parts) + "."


def compare_block(path: Path) -> str:
    """The 25 (source, target) pairs: gain over no pretraining with Holm over the pairs, and each measure's r."""
    from core.experiments.statistics import MIN_CLAIM_SEEDS, holm

    data = load(path)
    points = data["points"]
    adjusted = holm([p["gain_p"] for p in points])
    claims = len(data["seeds"]) >= MIN_CLAIM_SEEDS  # README's rule: no star below 3 seeds, whatever the p
    targets = sorted({p["target"] for p in points})
    sources = sorted({p["source"] for p in points})
    cell = {(p["target"], p["source"]): (p, a) for p, a in zip(points, adjusted)}
    short = {t: t.split("-")[0] for t in targets + sources}
    head = "| target \\ source | " + " | ".join(short[s] for s in sources) + " | no pretraining |"
    lines = [head, "|" + "---|" * (len(sources) + 2)]
    for t in targets:
        row = []
        for s in sources:
            p, a = cell[(t, s)]
            text = f"{pp(p['gain'])} [{pp(p['gain_ci'][0])}, {pp(p['gain_ci'][1])}]" + (" *" if claims and a < 0.05 else "")
            row.append(f"**{text}**" if p["in_domain"] else text)
        base = next(p for (tt, _), (p, _) in cell.items() if tt == t)["baseline_f1"]
        lines.append(f"| {short[t]} | " + " | ".join(row) + f" | {100 * base:.2f} |")
    star = (f"* Holm-adjusted p < 0.05 over the {len(points)} pairs" if claims else
            f"no star: a claim needs {MIN_CLAIM_SEEDS} seeds or more, whatever the p (Holm over the {len(points)} pairs)")
    lines += ["", f"Seeds {data['seeds']}, preset {data['preset']}; {star}; "
              "bold: the target's own text as source. Source: "
              f"`{path.relative_to(ROOT)}`.", "",
              "| measure | r [95% CI] | p | Spearman ρ | r within targets [95% CI] | r without in-domain |", "|---|---|---|---|---|---|"]
    for name, m in data["measures"].items():
        lines.append(f"| {name} | {m['r']:+.2f} [{m['r_ci'][0]:+.2f}, {m['r_ci'][1]:+.2f}] | {m['p']:.2f} | {m['rho']:+.2f} | "
                     f"{m['r_within']:+.2f} [{m['r_within_ci'][0]:+.2f}, {m['r_within_ci'][1]:+.2f}] | {m['r_off_diagonal']:+.2f} |")
    spans = [m for m in data["measures"].values() if m["r_ci"][0] < 0 < m["r_ci"][1]]
    lines += ["", f"- The interval of r spans 0 for {len(spans)} of {len(data['measures'])} measures: for each of "
              f"them, the {len(points)} pairs cannot say whether it predicts the gain (intervals this wide allow a strong "
              "relation as well as none)."]
    gains = {}
    for p in points:
        gains.setdefault(short[p["target"]], []).append(p["gain"])
    lines.append("- Gain range per target (points): " + "; ".join(
        f"{t} {pp(min(g))} to {pp(max(g))}" for t, g in sorted(gains.items())) + ".")
    return "\n".join(lines) + "\n"


def default_study(domain: str) -> Path:
    """The domain's result of the default recipe (crossner_study names it): the GPU run where there is one, else the
    CPU run in fp32, then in bf16. A domain studied on both keeps the GPU run here, the one with every row; the
    ablation table shows both."""
    import crossner_study as study

    parser = study.build_parser()
    paths = []
    for extra in ([], ["--cpu-precision", "fp32"], ["--cpu-precision", "bf16"]):
        args = parser.parse_args(["--domain", domain, *extra])
        paths.append(study.result_path(domain, study.recipe_variant(args)[1], RESULTS))
    return next((p for p in paths if p.is_file()), paths[0])


@lru_cache(maxsize=1)  # the JSONs do not change while one process checks several copies of README
def blocks() -> dict[str, str]:
    return {
        "study-v2": study_block([default_study(d) for d in DOMAINS], "protocol v2"),
        "study-v1": study_block([RESULTS / f"crossner-{d}-pick.json" for d in DOMAINS], "protocol v1"),
        "compare": compare_block(RESULTS / "crossner-compare-pooled-study.json"),
    }


# --------------------------------------------------------------------------- README


def render(text: str, made: dict[str, str]) -> str:
    def put(m: re.Match) -> str:
        name = m.group("name")
        return m.group(1) + made[name] + m.group(4) if name in made else m.group(0)

    return BLOCK.sub(put, text)


def loose_numbers(text: str) -> list[str]:
    """Decimal numbers typed by hand in README's results sections (outside generated blocks), 'line N: 2.38'."""
    start, end = text.find(SECTION[0]), text.find(SECTION[1])
    if start < 0:
        return []
    found = []
    stripped = BLOCK.sub(lambda m: m.group(1) + "\n" * m.group("body").count("\n") + m.group(4), text)
    first_line = stripped[:start].count("\n") + 1
    in_code = False
    for k, line in enumerate(stripped[start:end if end > 0 else None].splitlines()):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        found += [f"line {first_line + k}: {n}" for n in NUMBER.findall(line)]
    return found


def ablation_arguments() -> list[str]:
    """scripts/ablation_table.py's arguments: every study JSON in docs/results and every issue-46 plan, so a result
    added since the table was made is in it (or --check says the table is stale)."""
    import ablation_table

    results = sorted(str(p.relative_to(ROOT)) for p in RESULTS.glob("crossner-*.json")
                     if ablation_table.is_study_result(load(p)))
    plans = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scripts" / "plans").glob("issue46-*.plan"))
    return [*results, "--out", str((RESULTS / "ablation.json").relative_to(ROOT)), "--plans", *plans]


def generated_files() -> dict[Path, str]:
    """docs/results files that scripts make from JSON: ablation.md and ablation.json, from every study JSON and plan
    here (ablation_arguments), so a hand edit, a stale table or a result left out is found."""
    import ablation_table as ablation

    argv = ablation_arguments()
    args = ablation.build_parser().parse_args(argv)
    table = ablation.build([(ROOT / f).resolve() for f in args.results],
                           " ".join(["python scripts/ablation_table.py", *argv]), [ROOT / p for p in args.plans])
    return {RESULTS / "ablation.md": ablation.markdown(table), RESULTS / "ablation.json": ablation.as_json(table)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming what differs from the JSON")
    parser.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)  # tests check a copy
    args = parser.parse_args(argv)
    readme = args.readme
    text = readme.read_text("utf-8")
    made = dict(blocks())
    missing = [n for n in made if f"<!-- report:{n} -->" not in text]
    new = render(text, made)
    if not args.check:
        readme.write_text(new, "utf-8")
        print(f"wrote {len(made) - len(missing)} blocks into {readme}"
              + (f"; no place for {', '.join(missing)}" if missing else ""))
        if readme == README:
            for path, text in generated_files().items():
                path.write_text(text, "utf-8")
                print(f"wrote {path.relative_to(ROOT)}")
        return 0
    problems = [f"README.md has no block {n} (<!-- report:{n} --> ... <!-- /report:{n} -->)" for n in missing]
    for m in BLOCK.finditer(text):
        name = m.group("name")
        if name in made and m.group("body") != made[name]:
            was, now = set(NUMBER.findall(m.group("body"))), set(NUMBER.findall(made[name]))
            diff = [f"{n} (README)" for n in sorted(was - now)] + [f"{n} (JSON)" for n in sorted(now - was)]
            problems.append(f"block {name}: differs from the JSON" + (f": {', '.join(diff[:12])}" if diff else "")
                            + "\n" + "".join(list(difflib.unified_diff(m.group("body").splitlines(True), made[name].splitlines(True),
                                                                     "README", "JSON", n=0))[:12]))
    problems += [f"number typed by hand outside a generated block, {n}" for n in loose_numbers(text)]
    if readme == README:
        for path, expected in generated_files().items():
            if path.read_text("utf-8") != expected:
                problems.append(f"{path.relative_to(ROOT)} differs from what its script makes from the JSON")
    for p in problems:
        print(p)
    print("report: README matches the JSON" if not problems else f"report: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
