"""Rows made readable for a table: a count stays a count and a missing value is a dash. pandas turns an integer
column with one missing value into floats ("150.0") and Streamlit prints None as "None"; every page table built
from rows goes through `readable` so none shows either.

>>> readable([{"n": 150, "note": None}, {"n": None, "note": "x"}]).to_dict("records")
[{'n': '150', 'note': '—'}, {'n': '—', 'note': 'x'}]
>>> readable([{"f1": 0.5}, {"f1": 0.25}])["f1"].tolist()
[0.5, 0.25]
>>> readable([{"p": 0.4545454}, {"p": None}])["p"].tolist()  # one type per column: Arrow refuses floats mixed with "—"
['0.4545', '—']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

MISSING = "—"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 sentence', '2 sentences', '1,200 sentences': pages never say "1 sentences".

    >>> count(1, "sentence"), count(1200, "sentence"), count(0, "entity", "entities")
    ('1 sentence', '1,200 sentences', '0 entities')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def readable(rows: Sequence[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    for col in df.columns:
        values = df[col]
        present = values.dropna()
        kinds = {type(v) for v in present if v is not None}
        if len(present) == len(values) and not (values.dtype == object and present.map(lambda v: v is None).any()):
            if pd.api.types.is_float_dtype(values) and len(present) and (present % 1 == 0).all():
                df[col] = values.astype("int64")  # a count read back as floats
            elif values.dtype == object and len(kinds) > 1:  # "" beside 0: Arrow takes one type per column
                df[col] = [str(v) for v in values]
            continue
        if pd.api.types.is_numeric_dtype(values) and len(present) and (present % 1 == 0).all():
            df[col] = [MISSING if pd.isna(v) else str(int(v)) for v in values]
        elif len(present) and kinds <= {float}:
            df[col] = [MISSING if pd.isna(v) else f"{v:.4g}" for v in values]
        else:
            df[col] = [MISSING if v is None or (isinstance(v, float) and pd.isna(v)) else str(v) for v in values]
    return df
