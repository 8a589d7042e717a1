"""Shared bench plumbing: a results folder, a table printer, peak-memory measurement."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
# The reference data beside the checkout (never copied into the project), or $NERSELECT_CROSSNER.
CROSSNER = Path(os.environ.get("NERSELECT_CROSSNER", Path(__file__).resolve().parents[2] / "shared" / "data" / "crossner"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_table(rows: list[dict[str, Any]], title: str = "") -> None:
    if title:
        print(f"\n{title}")
    if not rows:
        print("(no rows)")
        return
    keys = list(rows[0])
    cells = [[_fmt(r.get(k)) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    print("  ".join(k.ljust(w) for k, w in zip(keys, widths)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"bench": name, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": platform.machine(),
               "python": platform.python_version(), **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=float))
    print(f"\nwrote {path}")
    return path


def write_results(name: str, payload: dict[str, Any], started: float, argv: list[str] | None, out: str | None) -> None:
    """The run's seconds and the command that made it added to `payload`, written to bench/results/NAME.json and, with
    `out` (a bench whose table README quotes: docs/results/), there too."""
    script = f"bench/bench_{name.replace('-', '_')}.py"
    payload = {**payload, "seconds": round(time.time() - started, 1),
               "command": " ".join(["python", script, *(argv if argv is not None else sys.argv[1:])])}
    write_json(name, payload)
    if out:
        Path(out).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {out}")


def crossner_splits(domain: str):
    """(train, dev, test) Corpus objects of one CrossNER domain; exits with a message when absent."""
    from core.data.corpus import read_corpus

    data = CROSSNER / domain
    if not (data / "train.txt").exists():
        raise SystemExit(f"CrossNER data not found under {data}")
    return tuple(read_corpus(data / f"{split}.txt") for split in ("train", "dev", "test"))
