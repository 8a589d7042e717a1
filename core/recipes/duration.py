"""Durations as a user types them ('2h', '1h30m', '90m', '45s', seconds) and as the product says them; here, below
both the runner (which checks a job's params) and the experiments (which keep a time limit).

>>> parse_duration("1h30m"), parse_duration("90m"), parse_duration("5400"), parse_duration("45s")
(5400.0, 5400.0, 5400.0, 45.0)
"""

from __future__ import annotations

import re

from core.errors import UserError

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([hms]?)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_duration(value: str | float | int | None, what: str = "time limit") -> float | None:
    """Seconds from '2h', '1h30m', '90m', '45s' or a plain number of seconds; None or '' for no limit."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = str(value).strip().lower().replace(" ", "")
        parts = _PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text or (len(parts) > 1 and any(u == "" for _, u in parts)):
            raise UserError(f"{what}: expected a duration such as 2h, 1h30m, 90m, 45s or seconds, got {value!r}")
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if seconds <= 0:
        raise UserError(f"{what}: expected a duration above zero, got {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """'1 h 30 min', '12 min', '45 s'.

    >>> format_duration(5400), format_duration(720), format_duration(45)
    ('1 h 30 min', '12 min', '45 s')
    """
    if seconds < 60:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min" if hours and minutes else f"{hours} h" if hours else f"{minutes} min"


def format_clock(seconds: float | None) -> str:
    """A running job's clock: tenths of a second while short (a quick job's time is its point), then h:mm:ss; '-'
    before it has started. The Runs page, its progress line and `python -m core jobs` all show it.

    >>> format_clock(None), format_clock(12.34), format_clock(3725), format_clock(90061)
    ('-', '12.3s', '1:02:05', '25:01:01')
    """
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"
