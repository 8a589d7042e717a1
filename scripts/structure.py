"""The shape of core/: import cycles, the largest modules, job functions that read params by hand, and references to
core from bench/ and scripts/ that a move left behind.

    python scripts/structure.py          # a table on stdout
    python scripts/structure.py --json   # the same as JSON

Imports are read from the source (ast), module-level and inside functions alike (a lazy import that
closes a loop is still a loop), except those under `if TYPE_CHECKING:`, which never run.
tests/test_structure.py holds the tree to these figures.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 460  # lines of code (code_lines: docstrings, comments and blank lines do not count)
LONG_ALLOWED = {"core/lm/ngram.py"}  # the Kneser-Ney estimator: one algorithm, kept whole on purpose
DOTTED_CORE = re.compile(r"core(\.[A-Za-z_]\w*)+")  # a string naming a core module: "core.train.ner_train"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """'core.x.y' -> path, for every module of the core package."""
    out = {}
    for path in sorted((root / "core").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The core modules `name` imports at run time."""
    tree = ast.parse(path.read_text("utf-8"))
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    found.add(full)
                elif base in known:
                    found.add(base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(name)
    return {m for m in found if m.count(".") > 0 or m == "core"} - {"core"}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    mods = modules(root)
    return {name: imports_of(path, name, set(mods)) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)


def code_lines(text: str) -> int:
    """Lines of code: not blank, not a comment alone, not inside a docstring. What the cap counts, so a file at the
    limit is split rather than its comments and docstrings deleted."""
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for k, line in enumerate(text.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and k not in docs)


def line_counts(root: Path = ROOT) -> list[tuple[str, int]]:
    """(path, code lines) of every core module, largest first."""
    rows = [(str(p.relative_to(root)), code_lines(p.read_text("utf-8"))) for p in modules(root).values()]
    return sorted(rows, key=lambda r: -r[1])


def hand_read_params(root: Path = ROOT) -> list[str]:
    """'path:function' of job functions (`*_job`) that read their params as a dict (`params.get(`, `params[`)."""
    out = []
    for path in modules(root).values():
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_job") and node.args.args \
                    and node.args.args[0].arg == "params":
                src = ast.get_source_segment(path.read_text("utf-8"), node) or ""
                if "params.get(" in src or "params[" in src:
                    out.append(f"{path.relative_to(root)}:{node.name}")
    return sorted(out)


def _top_level_names(path: Path) -> set[str]:
    """Names a module defines or imports at its top level (what `from module import name` can reach)."""
    names: set[str] = set()
    body = list(ast.parse(path.read_text("utf-8")).body)
    for node in body:
        if isinstance(node, (ast.If, ast.Try)):  # `try: import x` / `if ...: NAME = ...` bind at the top level too
            body += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                     *(b for h in getattr(node, "handlers", []) for b in h.body)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def stale_references(root: Path = ROOT) -> list[str]:
    """'path:line name' for each reference to core in bench/ and scripts/ that no longer resolves: an import of a
    module or name core lacks, or a string naming a core module ("core.train.ner_train"). Those scripts run only by
    hand, so a move in core left bench_training importing a module gone since the house redesign. An import on a
    line that mentions OLD_COMMIT reaches the old package a bench compares against, and is not checked."""
    mods = modules(root)
    tops = {name: _top_level_names(path) for name, path in mods.items()}
    out = []
    for path in sorted([*(root / "bench").glob("*.py"), *(root / "scripts").glob("*.py")]):
        text = path.read_text("utf-8")
        lines = text.splitlines()
        where = f"{path.relative_to(root)}"
        for node in ast.walk(ast.parse(text)):
            refs: list[tuple[str, str | None]] = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "core" and not node.level:
                refs = [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                refs = [(a.name, None) for a in node.names if a.name.split(".")[0] == "core"]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED_CORE.fullmatch(node.value):
                refs = [(node.value, None)]
            if not refs or "OLD_COMMIT" in lines[node.lineno - 1]:
                continue
            for module, name in refs:
                ok = module in mods and (name is None or f"{module}.{name}" in mods or name in tops[module])
                if not ok:
                    out.append(f"{where}:{node.lineno} {module}{'.' + name if name else ''}")
    return out


# Stages and top-level modules from the bottom up: a unit imports only units before it (lazy and type-only imports
# included), so a lower stage never needs a higher one to be read or tested.
STAGE_ORDER = ("__init__", "errors", "access", "environment", "progress", "tables", "data", "cliutil", "recipes", "runner", "lm",
               "train", "review", "selection", "similarity", "team", "adapt", "experiments", "commands", "cli", "__main__")


def unit_of(module: str) -> str:
    """'core.train.mlm' -> 'train'; 'core.errors' -> 'errors' (a top-level module is its own unit)."""
    return module.split(".")[1] if "." in module else "__init__"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import from a unit to one at its level or above in STAGE_ORDER (a unit missing from the
    order counts as above everything, so a new stage must be placed)."""
    rank = {u: i for i, u in enumerate(STAGE_ORDER)}
    out = []
    for module, targets in sorted(graph.items()):
        here = unit_of(module)
        for t in sorted(targets):
            there = unit_of(t)
            if there != here and rank.get(there, len(rank)) >= rank.get(here, len(rank)):
                out.append(f"{module} -> {t}")
    return out


def report(root: Path = ROOT) -> dict:
    counts = line_counts(root)
    graph = import_graph(root)
    return {"modules": len(counts), "import_cycles": cycles(graph), "upward_imports": upward_imports(graph),
            "largest": counts[:8], "over_limit": [(p, n) for p, n in counts if n > MAX_LINES and p not in LONG_ALLOWED],
            "hand_read_params": hand_read_params(root), "stale_references": stale_references(root)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--root", default=str(ROOT), help="a checkout to measure (default: this one)")
    args = ap.parse_args(argv)
    rep = report(Path(args.root))
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    print(f"core modules: {rep['modules']}")
    print(f"import cycles: {len(rep['import_cycles'])}")
    for c in rep["import_cycles"]:
        print("  " + " <-> ".join(c))
    print(f"imports against the stage order ({' < '.join(STAGE_ORDER)}): {len(rep['upward_imports'])}")
    for f in rep["upward_imports"]:
        print("  " + f)
    print(f"modules over {MAX_LINES} lines of code (besides {', '.join(sorted(LONG_ALLOWED))}): {len(rep['over_limit'])}")
    print("largest modules:")
    for p, n in rep["largest"]:
        print(f"  {n:5d}  {p}")
    print(f"job functions reading params by hand: {len(rep['hand_read_params'])}")
    for f in rep["hand_read_params"]:
        print("  " + f)
    print(f"references to core in bench/ and scripts/ that no longer resolve: {len(rep['stale_references'])}")
    for f in rep["stale_references"]:
        print("  " + f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
