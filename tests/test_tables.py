"""Issue 43.14: a table with a float column holding a missing value logged `ArrowInvalid: Could not convert '—'` on
every render. Every table `readable` makes converts to Arrow (what st.dataframe does), whatever its values."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tables import MISSING, readable

VALUES = st.one_of(st.none(), st.integers(-5, 10**6), st.floats(-1e3, 1e3, allow_nan=False),
                  st.text(max_size=5).filter(lambda t: t != MISSING))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"a": VALUES, "b": st.one_of(st.none(), st.floats(0, 1)), "c": st.integers(-(2**62), 2**62)}),
                min_size=1, max_size=6))
def test_every_readable_table_converts_to_arrow(rows):
    df = readable(rows)
    pa.Table.from_pandas(df)
    for col in ("a", "b"):
        assert [v is None for v in (r[col] for r in rows)] == [x == MISSING for x in df[col].tolist()]
