"""CRF decoding of a DEV pass: the product's Viterbi (core.train.crf.viterbi_decode, one host copy per batch)
against pytorch-crf's `decode` (the named baseline: an `.item()` per word), on the same emissions.

Emissions are random, but shaped like a CrossNER domain's DEV: its sentences' word counts, batch 64 sorted by length
as `_fast_scores` batches them, and the domain's BIOES tag count (4 per entity type + O). The encoder is left out:
this isolates the decoding that every NER epoch's DEV scoring, `evaluate` and `predict` run. Paths are checked equal.
On a GPU (--device cuda) every pytorch-crf `.item()` is a host-device sync; there the ratio is the point.

    python bench/bench_decode.py                       # CrossNER music DEV, CPU
    python bench/bench_decode.py --domain politics --device cuda --repeats 20
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import crossner_splits, print_table, write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--domain", default="music")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5, help="DEV passes timed per implementation (the median is shown)")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()

    import torch

    from core.data.tags import split_tag
    from core.train.crf import CRF, viterbi_decode

    if args.threads:
        torch.set_num_threads(args.threads)
    _, dev, _ = crossner_splits(args.domain)
    types = sorted({split_tag(t)[1] for seq in dev.tags for t in seq if t != "O"})
    n_tags = 4 * len(types) + 1
    torch.manual_seed(0)
    crf = CRF(n_tags, batch_first=True).to(args.device)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_()
    lengths = sorted(len(t) for t in dev.tokens)
    batches = []
    for i in range(0, len(lengths), args.batch_size):
        part = torch.tensor(lengths[i:i + args.batch_size])
        em = torch.randn(len(part), int(part.max()), n_tags, device=args.device)
        batches.append((em, (torch.arange(int(part.max()))[None, :] < part[:, None]).to(args.device)))

    def timed(decode) -> tuple[float, list]:
        runs, paths = [], []
        for _ in range(args.repeats + 1):  # the first pass warms up and is not counted
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            t = time.perf_counter()
            with torch.no_grad():
                paths = [p for em, mask in batches for p in decode(em, mask)]
            runs.append(time.perf_counter() - t)
        return statistics.median(runs[1:]), paths

    base_s, base_paths = timed(crf.decode)
    new_s, new_paths = timed(lambda em, mask: viterbi_decode(crf, em, mask))
    same = base_paths == new_paths
    rows = [{"decoder": "pytorch-crf decode (baseline)", "ms per DEV pass": 1000 * base_s, "x baseline": 1.0},
            {"decoder": "viterbi_decode (product)", "ms per DEV pass": 1000 * new_s, "x baseline": base_s / new_s}]
    print_table(rows, f"CRF decoding, CrossNER {args.domain} DEV ({len(lengths)} sentences, {sum(lengths):,} words, "
                      f"{n_tags} tags, batch {args.batch_size}, {args.device}); same paths: {same}")
    if not same:
        raise SystemExit("the paths differ: viterbi_decode is wrong")
    write_json("decode", {"args": vars(args), "sentences": len(lengths), "words": sum(lengths), "tags": n_tags,
                          "rows": rows, "same_paths": same})


if __name__ == "__main__":
    main()
