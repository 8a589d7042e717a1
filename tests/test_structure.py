"""The house's shape (issue 21): no import cycles in core/, no module over 460 lines of code (the KN estimator
excepted), no job function reading its params as a dict. scripts/structure.py prints the same figures."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
structure = load_script("structure")


def test_no_import_cycles_in_core():
    assert structure.cycles(structure.import_graph()) == []


def test_stages_import_one_way():
    """Issue 44: a lower stage never imports a higher one, not even lazily or for types (the runner runs the stages'
    job functions by name; what they share sits below both, in core/recipes)."""
    assert structure.upward_imports(structure.import_graph()) == []
    graph = {"core.data.x": {"core.runner.y"}, "core.runner.y": {"core.data.x"}, "core.newstage.z": {"core.data.x"}}
    assert structure.upward_imports(graph) == ["core.data.x -> core.runner.y"]


def test_no_module_over_the_line_limit():
    counts = structure.line_counts()
    assert [(p, n) for p, n in counts if n > structure.MAX_LINES and p not in structure.LONG_ALLOWED] == []


def test_job_functions_take_typed_params():
    assert structure.hand_read_params() == []


def test_the_cycle_finder_finds_a_lazy_loop(tmp_path):
    """A loop closed by an import inside a function is found; one under TYPE_CHECKING is not."""
    pkg = tmp_path / "core" / "x"
    pkg.mkdir(parents=True)
    (tmp_path / "core" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from core.x import b\n")
    (pkg / "b.py").write_text("def f():\n    from core.x.a import thing\n")
    (pkg / "c.py").write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from core.x import d
    """))
    (pkg / "d.py").write_text("import core.x.c\n")
    assert structure.cycles(structure.import_graph(tmp_path)) == [["core.x.a", "core.x.b"]]


def test_bench_and_scripts_reference_core_as_it_is():
    """bench/ and scripts/ run by hand only: a module core moved must not leave them importing it."""
    assert structure.stale_references() == []


def test_the_stale_reference_finder_finds_a_moved_module_and_a_missing_name(tmp_path):
    (tmp_path / "core" / "train").mkdir(parents=True)
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "core" / "train" / "__init__.py").write_text("")
    (tmp_path / "core" / "train" / "ner_train.py").write_text("X = 1\ndef train_ner():\n    pass\n"
                                                               "try:\n    import fast as speed\nexcept ImportError:\n    speed = None\n")
    (tmp_path / "bench").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "bench" / "b.py").write_text(textwrap.dedent("""
        from core.train import ner_train
        from core.train.ner_train import X, train_ner, speed
        from core.train import ner
        from core.train.ner_train import evaluate
        MODULES = ("core.train.ner_train", "core.train.ner_predict")
        from core.select import select  # the old package (OLD_COMMIT): not checked
    """))
    assert structure.stale_references(tmp_path) == [
        "bench/b.py:4 core.train.ner", "bench/b.py:5 core.train.ner_train.evaluate", "bench/b.py:6 core.train.ner_predict"]


def test_every_token_picker_is_keyed_by_position():
    """Issue 47: a picker whose labels are token texts stores a span on the last of two equal words (Streamlit maps a
    label back to an option by its text). Every token picker is ui_review.token_pills, labels unique per sentence."""
    import re

    pickers = [f"{p.relative_to(ROOT)}" for p in [*ROOT.glob("views/*.py"), *ROOT.glob("ui*.py")]
               if re.search(r"\.(pills|multiselect|segmented_control)\(\s*\"Tokens\"", p.read_text())]
    assert pickers == ["ui_review.py"]
    from core.review.highlight import token_labels

    words = ["paper", "a", "paper", "", " ", "pa\u200bper", "a"]
    labels = token_labels(words)
    assert len(set(labels)) == len(words) and labels[0] == "paper ·1" and "U+200B" in labels[5]


def test_the_cap_counts_code_not_explanations():
    """Issue 44: deleting a docstring or comments must not bring a module under the cap."""
    text = '"""Module doc\nover two lines."""\n\nimport os  # why\n\n\ndef f():\n    """Doc."""\n    # a comment\n    return os\n'
    assert structure.code_lines(text) == 3


def test_pages_say_counts_with_their_number():
    """Issue 43.15: "1 sentences". A page writes a count of sentences through core.tables.count, except in
    'K of N sentences' (a share, plural whatever N is) and a fixed limit."""
    import re

    loose = [f"{p.relative_to(ROOT)}:{k}" for p in [*ROOT.glob("views/*.py"), *ROOT.glob("ui*.py")]
             for k, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\{[^}]*\} sentences\b", line) and not re.search(r" of \{[^}]*\} sentences", line)
             and "DEFAULT_FIT_POINTS" not in line]
    assert loose == []


def test_the_architecture_tree_names_every_module_there_is():
    """Issue 44: docs/ARCHITECTURE.md's module tree is the tree: a module added, moved or removed without the map
    changing fails here, naming the difference."""
    import re

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "ARCHITECTURE.md").read_text("utf-8")
    block = re.search(r"```\ncore/\n(.*?)```", text, re.S).group(1)
    documented: dict[str, set[str]] = {}
    for line in block.splitlines():
        parts = line.split()
        if not parts:
            continue
        package, names = (parts[0].rstrip("/"), parts[1:]) if parts[0].endswith("/") else ("", parts)
        documented.setdefault(package, set()).update(n for n in names if n != "__init__")
    actual: dict[str, set[str]] = {}
    for path in (root / "core").rglob("*.py"):
        rel = path.relative_to(root / "core")
        package = rel.parent.as_posix() if rel.parent != Path(".") else ""
        if path.stem != "__init__":
            actual.setdefault(package, set()).add(path.stem)
    missing = {k: sorted(v - documented.get(k, set())) for k, v in actual.items() if v - documented.get(k, set())}
    stale = {k: sorted(v - actual.get(k, set())) for k, v in documented.items() if v - actual.get(k, set())}
    assert not missing and not stale, f"ARCHITECTURE.md's tree: modules missing {missing}, modules that do not exist {stale}"


def test_no_page_is_over_250_lines():
    """Issue 44: a page that grows past 250 lines holds panels a helper module (ui_*.py) should: split it."""
    root = Path(__file__).resolve().parents[1]
    long = {p.name: n for p in (root / "views").glob("*.py") if (n := len(p.read_text("utf-8").splitlines())) > 250}
    assert not long, f"pages over 250 lines: {long}"


def test_core_never_imports_the_ui():
    """core/ stays importable without Streamlit (the CLI, jobs and scripts load it alone): no module imports it,
    not even inside a function (websession read Streamlit's cookie decoder that way)."""
    import ast

    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n == "streamlit" or n.startswith("streamlit.")]
    assert found == []
