"""A selection: the DC sentences a strategy kept (best first), its full score array and ranking, and its exports."""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from core.data.atomic import split_fields, temp_path_for
from core.data.corpus import Corpus
from core.data.stream import CorpusStream, imported_field, selected_records
from core.errors import UserError

EXPORT_FORMATS = ("txt", "jsonl", "csv")


@dataclass
class SelectionMeta:
    """What a saved selection records beside its arrays (meta.json), read once here: the pages, the CLI, lineage,
    review tasks and the map read fields. `key` and `path` name where it is saved; unknown fields (a newer or
    older writer's) stay in `other` and are written back."""

    strategy: str | None = None
    budget: int = 0  # sentences kept
    key: str = ""
    path: str | None = None  # its folder, when read from the store
    budget_requested: Any = None  # what was asked for (a count or a ratio of DC)
    dc_size: int | None = None
    tc_size: int | None = None
    model: str | None = None
    model2: str | None = None
    ner_model: str | None = None
    seed: int | None = None
    options: dict[str, Any] | None = None
    tc_hash: str | None = None
    dc_hash: str | None = None
    tc_name: str | None = None
    dc_name: str | None = None
    score_name: str | None = None
    higher_is_better: bool = True
    notes: list[str] = field(default_factory=list)
    target_domain: str | None = None
    dc_domain_counts: dict[str, int] | None = None
    selected_domain_counts: dict[str, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the ranking's own facts (DSIR's sampling, ...)
    lineage: dict[str, Any] | None = None  # a map region: the map and the region it came from
    created: float | None = None
    created_by: str | None = None
    seconds: float | None = None
    other: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SelectionMeta:
        known, other = split_fields(cls, data, own=("other", "folder", "label"))
        for name in ("notes", "extra"):
            if known.get(name) is None:
                known.pop(name, None)
        return cls(**known, other=other)

    def to_dict(self) -> dict[str, Any]:
        """meta.json's form: every field but `path` (where it lies is not part of it) and `other` merged back in."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("other", "path")}
        return {**out, **self.other}

    @property
    def label(self) -> str:
        """How a person reads a selection everywhere: strategy with the options that differ from their defaults, as an
        experiment row names it (`extra["row"]`, written by core.selection.strategies.select; two DSIR selections of
        one DC differed only by their key before), model, size of DC, DC and the key's start."""
        model = f" · {Path(str(self.model)).name}" if self.model and self.model != "default" else ""
        size = self.dc_size
        amount = f"{self.budget:,}/{size:,}" if isinstance(self.budget, int) and isinstance(size, int) else f"{self.budget or '?'}"
        name = (self.extra.get("row") if isinstance(self.extra, dict) else None) or self.strategy or "selection"
        return f"{name}{model} · {amount} · {self.dc_name or '?'} [{self.key[:8]}]"


@dataclass
class Selection:
    """Selected DC sentences (best first) with the full score array and ranking over DC."""

    strategy: str
    indices: np.ndarray  # (k,) DC indices of the selected sentences, rank order
    scores: np.ndarray  # (N,) score of every DC sentence
    order: np.ndarray  # (N,) every DC index, best first
    meta: SelectionMeta
    key: str | None = None
    folder: Path | None = None
    source: CorpusStream | None = None  # DC, to read the selected rows from when they are needed
    selected_corpus: Corpus | None = field(default=None, repr=False)

    @property
    def selected(self) -> Corpus:
        """The selected sentences with every field DC carried, read on first use (from DC, or
        from the saved selected.jsonl): a 1M-sentence selection is not held unless asked for."""
        if self.selected_corpus is None:
            if self.source is not None:
                self.selected_corpus = self.source.take(self.indices)
            elif self._rows_path() is not None:
                rows = list(self._file_records())
                fields = {name: [r.get(k) for r in rows] for k in (rows[0] if rows else {})
                          if (name := imported_field(k)) is not None}
                self.selected_corpus = Corpus(tokens=[r["tokens"] for r in rows], fields=fields,
                                              name=self.meta.dc_name or "")
            else:
                raise UserError(f"selection {self.key} has neither its DC nor a saved selected.jsonl")
        return self.selected_corpus

    def _rows_path(self) -> Path | None:
        path = self.folder / "selected.jsonl" if self.folder is not None else None
        return path if path is not None and path.exists() else None

    def _file_records(self) -> Iterator[dict[str, Any]]:
        with open(self._rows_path(), encoding="utf-8") as fh:  # type: ignore[arg-type]
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    @property
    def dc_size(self) -> int:
        return int(self.meta.dc_size or 0)

    @property
    def budget(self) -> int:
        return len(self.indices)

    @property
    def notes(self) -> list[str]:
        return list(self.meta.notes)

    def records(self) -> Iterator[dict[str, Any]]:
        """JSON-ready rows in rank order, streamed: from selected.jsonl when saved, else from DC."""
        if self.selected_corpus is None and self._rows_path() is not None:
            yield from self._file_records()
            return
        if self.selected_corpus is None and self.source is not None and self.source.streamed:
            yield from selected_records(self.source, self.indices, self.scores)
            return
        for rank, i in enumerate(self.indices):
            rec = self.selected.record(rank)
            rec.pop("tags", None)
            yield {"text": rec.pop("text"), "tokens": rec.pop("tokens"), "score": finite_or_none(self.scores[i]), "rank": rank + 1,
                   "dc_index": int(i), **rec}

    def write_export(self, path: str | Path, fmt: str | None = None) -> Path:
        """The export written row by row (atomically): memory stays flat for any selection size."""
        path = Path(path)
        fmt = fmt or {".txt": "txt", ".csv": "csv"}.get(path.suffix.lower(), "jsonl")
        if fmt not in EXPORT_FORMATS:
            raise UserError(f"unknown export format {fmt!r}: expected one of {', '.join(EXPORT_FORMATS)}")
        tmp = temp_path_for(path)
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                _write_records(fh, self.records(), fmt)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    def to_frame(self, limit: int | None = None):
        import pandas as pd

        rows = []
        for rec in self.records():
            rec.pop("tokens")
            rows.append(rec)
            if limit is not None and len(rows) >= limit:
                break
        return pd.DataFrame(rows)

    def export_bytes(self, fmt: str) -> bytes:
        """The selection as txt (one sentence per line), JSONL (all fields) or CSV."""
        if fmt not in EXPORT_FORMATS:
            raise UserError(f"unknown export format {fmt!r}: expected one of {', '.join(EXPORT_FORMATS)}")
        buf = io.StringIO(newline="")
        _write_records(buf, self.records(), fmt)
        return buf.getvalue().encode("utf-8")

    def domain_precision(self, target_domain: str | None = None) -> dict[str, Any] | None:
        """Share of selected sentences from the target domain, next to random's expectation
        (the domain's share of DC). None when DC carries no `domain` field or no target is known."""
        counts: dict[str, int] = self.meta.dc_domain_counts or {}
        target = target_domain or self.meta.target_domain
        if not counts or target is None:
            return None
        if target_domain and str(target_domain) not in counts:  # a typo read "precision 0.000 against random 0.000"
            known = ", ".join(sorted(counts, key=lambda d: -counts[d])[:12])
            raise UserError(f"target domain {target_domain!r} is none of this DC's domains ({known})")
        selected_counts = self.meta.selected_domain_counts
        if selected_counts is not None:  # counted while selecting: no need to read the selected rows
            hits = int(selected_counts.get(str(target), 0))
        elif "domain" in self.selected.fields:
            hits = sum(1 for d in self.selected.fields["domain"] if str(d) == str(target))
        else:
            return None
        return {"target_domain": target, "domain_precision": hits / max(1, len(self.indices)),
                "random_domain_precision": counts.get(str(target), 0) / max(1, self.dc_size)}

    def summary(self, target_domain: str | None = None) -> dict[str, Any]:
        out = {"strategy": self.strategy, "selected": len(self.indices), "dc_size": self.dc_size,
               "seconds": self.meta.seconds, "key": self.key, "score_name": self.meta.score_name,
               "notes": self.notes}
        dp = self.domain_precision(target_domain)
        if dp is not None:
            out.update(dp)
        return out


def finite_or_none(v: Any) -> Any:
    v = float(v)
    return v if math.isfinite(v) else None


def _write_records(fh: Any, records: Iterator[dict[str, Any]], fmt: str) -> None:
    """txt (one sentence per line), JSONL (every field) or CSV (every field but tokens), row by row."""
    if fmt == "txt":
        for r in records:
            fh.write(" ".join(r["tokens"]) + "\n")
    elif fmt == "jsonl":
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        import csv

        writer = None
        for r in records:
            r = {k: v for k, v in r.items() if k != "tokens"}
            if writer is None:
                writer = csv.DictWriter(fh, fieldnames=list(r), extrasaction="ignore", lineterminator="\n")
                writer.writeheader()
            writer.writerow({k: "" if v is None else v for k, v in r.items()})
