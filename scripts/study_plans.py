"""What the study plans (scripts/plans/*.plan) still have to run, counted from the result JSONs in docs/results.

A plan is what one GPU call runs (scripts/device_study.sh): one lane per line, "DOMAINS ROWS [STUDY ARGUMENTS]".
Each lane is read here as that script reads it and expanded into its study commands as scripts/crossner_study.py
expands them (a --grid lane: the default recipe, then each knob value alone), with the seeds and preset the script
passes. Each command's result JSON (the study's own naming) is then counted against the rows and seeds it asks for:
cells with no stored copy, and stored cells the command would run again (--rerun-old-head, --cpu-precision). So "what
is left" comes from the same code that runs the cells, not from a list kept by hand.

    python scripts/study_plans.py scripts/plans/issue46-*.plan       # a table per plan, and the total
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "scripts"))  # crossner_study; appended, so a script never shadows a package

SEEDS = "1,2,3"  # scripts/device_study.sh's defaults for SEEDS and PRESET
PRESET = "study"


class Lane(NamedTuple):  # not a dataclass: tests load scripts without registering them in sys.modules
    domains: list[str]
    rows: str
    args: list[str]


def read_plan(path: Path) -> list[Lane]:
    """The lanes of a plan as scripts/device_study.sh splits them: '#' starts a comment, blank lines are skipped, and
    a lane needs at least DOMAINS and ROWS (a shorter one is a UserError naming the file and line)."""
    from core.errors import UserError

    lanes = []
    for number, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        words = line.split("#")[0].split()
        if not words:
            continue
        if len(words) < 2:
            raise UserError(f"{path}, line {number}: {line.strip()!r}: expected DOMAINS ROWS [STUDY ARGUMENTS]")
        lanes.append(Lane([d for d in words[0].split(",") if d], words[1], words[2:]))
    return lanes


def lane_studies(lane: Lane, seeds: str = SEEDS, preset: str = PRESET) -> list[argparse.Namespace]:
    """One parsed study command per (domain, recipe) of the lane, as device_study.sh and crossner_study.py run them."""
    import crossner_study as study

    parser = study.build_parser()
    out = []
    for domain in lane.domains:
        argv = ["--domain", domain, "--rows", lane.rows, "--seeds", seeds, "--preset", preset, *lane.args]
        args = parser.parse_args(argv)
        commands = [c[2:] for c in study.grid_commands(args, argv)] if args.grid else [argv]
        out += [parser.parse_args(c) for c in commands]
    return out


def study_left(args: argparse.Namespace, results: Path) -> dict[str, Any]:
    """One study command against its result JSON: the cells it asks for, those with no stored copy, and the stored
    ones it would run again."""
    import crossner_study as study

    from core.experiments.plan import row_names

    left = study.cells_left(args, results)
    asked = len(row_names(args.rows)) * len([s for s in args.seeds.split(",") if s.strip()])  # each row once
    return {"domain": args.domain, "variant": left.variant, "file": left.path.name, "asked": asked,
            "missing": len(left.missing), "again": len(left.again),
            "to_go": [f"{r} {s}" for r, s in left.missing] + [f"{r} {s} again" for r, s in left.again]}


def plans_left(plans: list[Path], results: Path = ROOT / "docs" / "results") -> list[dict[str, Any]]:
    """Per plan: its studies with their counts, and the totals."""
    out = []
    for plan in plans:
        studies = [study_left(args, results) for lane in read_plan(plan) for args in lane_studies(lane)]
        name = str(plan.resolve().relative_to(ROOT)) if plan.resolve().is_relative_to(ROOT) else str(plan)
        out.append({"plan": name, "studies": studies, **{k: sum(s[k] for s in studies) for k in ("asked", "missing", "again")}})
    return out


def markdown(left: list[dict[str, Any]]) -> list[str]:
    """The plans' table: one line per plan, then how to run one."""
    if not left:
        return []
    # a knob's plan asks for its default recipe's cells too (the default pass of a --grid): count each cell once
    unique = {(s["file"], cell) for p in left for s in p["studies"] for cell in s["to_go"]}
    plans = f"{len(left)} plan" + ("s" if len(left) > 1 else "")
    lines = ["", f"**What is left**: {len(unique)} cells to run over {plans} (each cell once; a knob's plan "
             "also asks for its default recipe's cells, so the rows below overlap).", "",
             "| plan | studies | cells asked | done | to go (no copy yet) | to go (stored, run again) |",
             "|---|---|---|---|---|---|"]
    for p in left:
        done = p["asked"] - p["missing"] - p["again"]
        lines.append(f"| {p['plan']} | {len(p['studies'])} | {p['asked']} | {done} | {p['missing']} | {p['again']} |")
    lines += ["", "A plan runs on a lent GPU with `source scripts/device_env.sh && PLAN=<plan> bash "
              "scripts/device_study.sh` (its comment says how many calls; a CPU plan's comment gives its command); "
              "the same call again continues. `python scripts/study_plans.py <plan>` lists its studies one by one."]
    return lines


def main(argv: list[str] | None = None) -> int:
    from core.errors import UserError

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("plans", nargs="+", type=Path, help="plan files (scripts/plans/*.plan)")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results", help="where the result JSONs are")
    args = parser.parse_args(argv)
    try:
        left = plans_left(args.plans, args.results)
    except (OSError, UserError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in left:
        print(f"\n{p['plan']}: {p['missing'] + p['again']} of {p['asked']} cells to go")
        for s in p["studies"]:
            print(f"  {s['domain']:11s} {s['variant']:40s} asked {s['asked']:3d}  no copy {s['missing']:3d}  "
                  f"run again {s['again']:3d}  ({s['file']})")
    print("\n".join(markdown(left)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
