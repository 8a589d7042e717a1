"""The A/A control of issue 46: cells whose MLM left the encoder unchanged (drift cosine and CKA both 1.0) against
`none` of the same seed in the domain's default study. Any difference is not the encoder's: it is how the NER model
was built from the MLM folder. Before the head was seeded after the encoder's load (core.train.ner_model), this
differed by more than a point on some seeds; since then it must be zero on the same device.

    python scripts/aa_control.py docs/results/controls/crossner-v2-literature-study-head_warmup_steps400-pick4.json \\
        docs/results/crossner-v2-literature-study-pick4.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def unchanged_against_none(variant: dict, default: dict) -> list[dict]:
    """One row per unchanged-encoder cell: its seed, row, the checkpoint pick chose, and TEST F1 minus none's."""
    none = {c["seed"]: c["f1"] for c in default["cells"] if c["row"] == "none"}
    rows = []
    for cell in variant["cells"]:
        drift = cell.get("drift") or {}
        if drift.get("cosine") == 1.0 and drift.get("cka") == 1.0 and cell["seed"] in none:
            rows.append({"row": cell["row"], "seed": cell["seed"], "chosen": (cell.get("pick") or {}).get("chosen"),
                         "f1": cell["f1"], "none": none[cell["seed"]], "minus_none": cell["f1"] - none[cell["seed"]]})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variant", type=Path, help="a study JSON whose MLM left the encoder unchanged")
    p.add_argument("default", type=Path, help="the same domain's study JSON with the none row")
    args = p.parse_args(argv)
    variant, default = json.loads(args.variant.read_text()), json.loads(args.default.read_text())
    from core.experiments.records import ran_alike

    ways = {ran_alike(variant["cells"]), ran_alike(default["cells"])}
    if len(ways) > 1:  # a device or precision moves F1 by itself: the control would measure the machine
        raise SystemExit(f"error: the two studies ran differently ({' vs '.join(', '.join(w) or '?' for w in ways)}): "
                         "the A/A control compares cells run alike only")
    rows = unchanged_against_none(variant, default)
    print("| row | seed | checkpoint used | TEST F1 | none | minus none |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['row']} | {r['seed']} | {r['chosen']} | {100 * r['f1']:.2f} | {100 * r['none']:.2f} "
              f"| {100 * r['minus_none']:+.2f} |")
    moved = [r for r in rows if r["minus_none"]]
    print(f"\n{len(rows)} unchanged-encoder cells; {len(moved)} differ from none "
          f"({'the NER head did not depend on the seed alone' if moved else 'as they must'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
