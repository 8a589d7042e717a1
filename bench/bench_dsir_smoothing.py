"""How DSIR's estimate of TC's n-gram distribution changes what it picks: add-one (one count added to every hashed
bucket, what the studies ran) against DC's distribution as TC's prior (`smoothing=dc`, core.lm.dsir.log_ratios), each
with the paper's summed weight and with `length=chunk`. The corpora are the studies' own (protocol v2), the budget
theirs (|TC| of the whole TC) and the sampling theirs (Gumbel). TC is also cut to 10, 30 and 100 sentences (drawn
with the seed): a user's TC is often that small, and there add-one's prior is most of p_TC. Per row, the mean over
seeds 1 to 3 (each seed draws the TC cut and the Gumbel noise) of the share of the selection from the target domain
and the selection's tokens per sentence against DC's.

    python bench/bench_dsir_smoothing.py [--out docs/results/dsir-smoothing.json]

Not a timing: the figures are seeded and the load does not change them.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CROSSNER, print_table, write_results
from bench_dsir_length import SEEDS, dsir_picks

from core.data.corpus import Corpus
from core.experiments.study import DOMAINS, crossner_protocol
from core.recipes.selection_options import LENGTHS, SMOOTHINGS

TC_SIZES = (10, 30, 100, None)  # None: the whole TC


def domain_rows(domain: str) -> list[dict[str, object]]:
    corpora = crossner_protocol(CROSSNER, domain)
    tc, dc = corpora.tc, corpora.dc
    in_target = np.array([d == domain for d in dc.fields["domain"]])
    rows = []
    for size in [s for s in TC_SIZES if s is None or s < len(tc)]:  # a cut as large as TC is TC
        def tc_of(seed: int, size: int | None = size) -> Corpus:
            return tc if size is None else tc.subset(sorted(random.Random(seed).sample(range(len(tc)), size)))

        for length in LENGTHS:
            for smoothing in SMOOTHINGS:
                precision, picked, whole = dsir_picks(tc_of, dc, in_target, len(tc),
                                                      {"length": length, "smoothing": smoothing})
                rows.append({"domain": domain, "tc": size or len(tc), "budget": len(tc), "length": length,
                             "smoothing": smoothing, "target_share_of_dc": round(float(in_target.mean()), 3),
                             "domain_precision": round(precision, 3), "tokens_vs_random": round(picked / whole, 3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="also write the JSON here (e.g. docs/results/dsir-smoothing.json)")
    args = parser.parse_args(argv)
    started = time.time()
    rows = [row for domain in DOMAINS for row in domain_rows(domain)]
    print_table(rows, f"DSIR by TC smoothing (mean over seeds {', '.join(map(str, SEEDS))}; baseline: random = target_share_of_dc)")
    pairs = {}
    for r in rows:
        pairs.setdefault((r["tc"] == r["budget"], r["length"], r["smoothing"]), []).append(r["domain_precision"])
    summary = [{"tc": "whole" if whole else "cut", "length": length, "smoothing": smoothing,
                "mean_domain_precision": round(float(np.mean(v)), 3), "rows": len(v)}
               for (whole, length, smoothing), v in sorted(pairs.items(), reverse=True)]
    print_table(summary, "Mean over domains (and over the 10/30/100-sentence cuts)")
    write_results("dsir-smoothing", {"rows": rows, "summary": summary, "seeds": list(SEEDS)}, started, argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
