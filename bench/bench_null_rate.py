"""How often the studies' paired test (core.experiments.statistics.paired_test: the two-level bootstrap over seeds and
TEST sentences) claims a difference where there is none, by number of seeds and by how far a seed moves F1.

Two rows are drawn from one distribution: each TEST sentence has a difficulty both rows share, each (row, seed) a
shift of the model's logit drawn with `seed_sd`, and a sentence's gold mentions are found with the resulting
probability. The rows differ by chance alone, so every p < 0.05 is a false claim; a sound test rejects about 5% of
the time. With few seeds the bootstrap cannot see the seed-to-seed spread (resampling three values), so a large
`seed_sd` makes it claim too often; a small one leaves it conservative (sentence noise dominates). So the test also
reads a seed-level t (`seed_level_test`) and claims only where both readings do: the table gives both, and the power
rows what that costs where a real difference is planted. The README's statistics paragraph quotes this table.

    python bench/bench_null_rate.py [--reps 500] [--out docs/results/null-rate.json]

Not a timing: the machine's load does not change the figures (seeded), only how long they take.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_results

from core.experiments.statistics import f1_of, paired_test

SENTENCES = 300  # a CrossNER TEST split is 400 to 900 sentences; 300 keeps the run short
SHIFT = 0.15  # a real difference for the power rows: about 3 F1 points, the size of the gains the studies look for


def _runs(rng: np.random.Generator, difficulty: np.ndarray, gold: np.ndarray, seeds: int, seed_sd: float,
          shift: float = 0.0) -> list:
    """One row's per-sentence (tp, fp, fn) counts for each seed; `shift` moves the row's logit (a real difference)."""
    out = []
    for _ in range(seeds):
        found = 1 / (1 + np.exp(-(0.3 + shift + difficulty + rng.normal(0, seed_sd))))
        tp = rng.binomial(gold, found)
        out.append(np.stack([tp, rng.binomial(gold, 0.25), gold - tp], 1))
    return out


def claim_rate(seeds: int, seed_sd: float, reps: int, n_boot: int, shift: float = 0.0, seed: int = 0) -> dict[str, float]:
    """How often p < 0.05 over `reps` draws, for the test as it stands (both readings) and for the resampled reading
    alone (the test before the seed-level t was added): false claims when `shift` is 0, power when it is not."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.0, SENTENCES)
    gold = rng.integers(1, 4, SENTENCES)
    claims, resampled, spread, delta = 0, 0, [], []
    for r in range(reps):
        a, b = _runs(rng, difficulty, gold, seeds, seed_sd, shift), _runs(rng, difficulty, gold, seeds, seed_sd)
        per_seed = [f1_of(x) - f1_of(y) for x, y in zip(a, b)]
        spread.append(np.std(per_seed, ddof=1))
        delta.append(np.mean(per_seed))
        test = paired_test(a, b, n_boot=n_boot, seed=r)
        claims += test["p"] < 0.05
        resampled += test.get("p_resampled", test["p"]) < 0.05
    return {"seeds": seeds, "seed_sd_logit": seed_sd, "shift_logit": shift,
            "mean_diff_points": round(100 * float(np.mean(delta)), 2),
            "per_seed_diff_sd_points": round(100 * float(np.mean(spread)), 2),
            "claims": round(claims / reps, 3), "claims_resampled_only": round(resampled / reps, 3), "reps": reps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=500, help="null draws per setting")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per test")
    parser.add_argument("--out", default=None, help="also write the JSON here (e.g. docs/results/null-rate.json)")
    args = parser.parse_args(argv)
    started = time.time()
    rows = [claim_rate(s, sd, args.reps, args.n_boot) for s in (3, 5) for sd in (0.02, 0.3, 0.6)]
    print_table(rows, f"false claims at p < 0.05 under no difference ({args.reps} draws each; a sound test: about 0.05)")
    power = [claim_rate(s, sd, args.reps, args.n_boot, shift=SHIFT) for s in (3, 5) for sd in (0.02, 0.3)]
    print_table(power, f"claims at p < 0.05 with a real difference (logit +{SHIFT}; the higher the better)")
    write_results("null-rate", {"sentences": SENTENCES, "n_boot": args.n_boot, "rows": rows, "power": power}, started,
                  argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
