"""Rows made readable for a table: a count stays a count and a missing value is a dash. pandas turns an integer
column with one missing value into floats ("150.0") and Streamlit prints None as "None"; every page table built
from rows goes through `readable` so none shows either.

>>> readable([{"n": 150, "note": None}, {"n": None, "note": "x"}]).to_dict("records")
[{'n': '150', 'note': '—'}, {'n': '—', 'note': 'x'}]
>>> readable([{"f1": 0.5}, {"f1": 0.25}])["f1"].tolist()
[0.5, 0.25]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

MISSING = "—"


def readable(rows: Sequence[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    for col in df.columns:
        values = df[col]
        present = values.dropna()
        if len(present) == len(values) and not (values.dtype == object and present.map(lambda v: v is None).any()):
            if pd.api.types.is_float_dtype(values) and len(present) and (present % 1 == 0).all():
                df[col] = values.astype("int64")  # a count read back as floats
            continue
        if pd.api.types.is_numeric_dtype(values) and len(present) and (present % 1 == 0).all():
            df[col] = [MISSING if pd.isna(v) else str(int(v)) for v in values]
        else:
            df[col] = [MISSING if v is None or (isinstance(v, float) and pd.isna(v)) else v for v in values]
    return df
