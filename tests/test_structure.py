"""The house's shape (issue 21): no import cycles in core/, no module over 600 lines (the KN estimator
excepted), no job function reading its params as a dict. scripts/structure.py prints the same figures."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("structure", ROOT / "scripts" / "structure.py")
structure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(structure)


def test_no_import_cycles_in_core():
    assert structure.cycles(structure.import_graph()) == []


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
