"""What DSIR picks on each CrossNER domain with its two ways of weighing sentences of different lengths: the paper's
sum over a sentence's n-grams (`length=sum`, the default the studies ran) and `length=chunk` (each sentence weighed
as a chunk of DC's mean length: core.lm.dsir.dsir_scores). The corpora are the studies' own (protocol v2:
`core.experiments.study.crossner_protocol`), the budget theirs (|TC|, TC:SC 1:1) and five times it, and the
sampling theirs (Gumbel, seeds 1 to 3). Per domain: the share of the selection from the target domain (dev half B is the only target text
in DC), the selection's mean tokens per sentence against DC's, and so how much less text a DSIR row pretrains on than
the random row of the same count.

    python bench/bench_dsir_length.py [--out docs/results/dsir-length.json]

Not a timing: the figures are seeded and the load does not change them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CROSSNER, print_table, write_results

from core.data.corpus import Corpus
from core.experiments.study import DOMAINS, crossner_protocol
from core.recipes.selection_options import LENGTHS
from core.selection.strategies import select

SEEDS = (1, 2, 3)
BUDGETS = (1, 5)  # times |TC|: the studies' SC, and a larger draw


def domain_rows(domain: str) -> list[dict[str, object]]:
    corpora = crossner_protocol(CROSSNER, domain)
    tc, dc = corpora.tc, corpora.dc
    in_target = np.array([d == domain for d in dc.fields["domain"]])
    rows = []
    for times in BUDGETS:
        for length in LENGTHS:
            rows.append(_row(tc, dc, in_target, domain, times * len(tc), length))
    return rows


def dsir_picks(tc_of: Callable[[int], Corpus], dc: Corpus, in_target: np.ndarray, budget: int,
               options: dict[str, str]) -> tuple[float, float, float]:
    """Mean over SEEDS of the share of DSIR's picks from the target domain and of their tokens per sentence, and DC's
    tokens per sentence: what both DSIR option benches report. `tc_of(seed)` is the seed's TC (a cut of it may vary)."""
    precision, tokens = [], []
    for seed in SEEDS:
        sel = select(tc_of(seed), dc, "dsir", budget, seed=seed, options=options)
        precision.append(float(in_target[sel.indices].mean()))
        tokens.append(sel.meta.extra["mean_tokens"])
    return float(np.mean(precision)), float(np.mean([t["selected"] for t in tokens])), tokens[0]["dc"]


def _row(tc, dc, in_target: np.ndarray, domain: str, budget: int, length: str) -> dict[str, object]:
    precision, picked, whole = dsir_picks(lambda seed: tc, dc, in_target, budget, {"length": length})
    return {"domain": domain, "budget": budget, "length": length, "dc": len(dc),
            "target_in_dc": int(in_target.sum()), "domain_precision": round(precision, 3),
            "mean_tokens_selected": round(picked, 1), "mean_tokens_dc": round(whole, 1),
            "tokens_vs_random": round(picked / whole, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="also write the JSON here (e.g. docs/results/dsir-length.json)")
    args = parser.parse_args(argv)
    started = time.time()
    rows = [row for domain in DOMAINS for row in domain_rows(domain)]  # precision: at most target_in_dc / budget
    print_table(rows, f"DSIR by sentence-length weighing (mean over seeds {', '.join(map(str, SEEDS))})")
    write_results("dsir-length", {"rows": rows, "seeds": list(SEEDS)}, started, argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
