"""Streaming import of a large plain-text DC: peak memory against the file size.

Baseline in the same run: `read_corpus` (the whole corpus as Python lists), run in a
child process so the two peaks do not mix. Usage:
    python bench/bench_import.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import peak_rss_mb, print_table, write_json

WORDS = ("the band released an album in with guitar singer song tour record label award festival city "
         "university physics chemistry theory election party minister parliament novel poem author").split()


def make_file(path: Path, size_mb: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    written = 0
    block = []
    with open(path, "w", encoding="utf-8") as fh:
        while written < target:
            line = " ".join(rng.choices(WORDS, k=rng.randint(5, 35))) + " .\n"
            block.append(line)
            written += len(line)
            if len(block) >= 10000:
                fh.write("".join(block))
                block = []
        fh.write("".join(block))
    return written


def measure(mode: str, path: str, ws: str) -> None:
    """Child process: run one mode and print 'seconds peak_mb sentences'."""
    t = time.perf_counter()
    if mode == "import":
        from core.data.workspace import Workspace

        n = Workspace(ws).import_corpus(path, role="dc", name="dc").sentences
    else:
        from core.data.corpus import read_corpus

        n = len(read_corpus(path))
    print(time.perf_counter() - t, peak_rss_mb(), n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--skip-baseline", action="store_true", help="skip the in-memory baseline (it needs many GB at 1 GB)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dc.txt"
        size = make_file(path, args.size_mb)
        rows = []
        modes = ["import"] + ([] if args.skip_baseline else ["read_corpus (baseline)"])
        for mode in modes:
            out = subprocess.run([sys.executable, __file__, "--child", mode.split()[0], str(path), str(Path(tmp) / "ws")],
                                 capture_output=True, text=True, check=True).stdout.split()
            seconds, peak, n = float(out[0]), float(out[1]), int(out[2])
            rows.append({"mode": mode, "file_mb": size / 2**20, "sentences": n, "seconds": seconds,
                         "peak_rss_mb": peak, "peak/file": peak / (size / 2**20), "MB/s": size / 2**20 / seconds})
        print_table(rows, "Streaming import vs in-memory read")
        write_json("import", {"rows": rows})


if __name__ == "__main__":
    main()
