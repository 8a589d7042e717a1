"""Data behind the Inspect page: cached NER predictions over a corpus or a saved selection,
the sortable / filterable sentence table, selected-vs-filtered status, review exports.

Predictions are computed by the "predict" job (core.train.ner_predict.ner_predict_job) writing into a
workspace artifact (kind "predictions") keyed by the model's fingerprint, the corpus content
hash and the selected indices, so the same request never runs twice and survives restarts.
A selection's sentences are written to `subset.jsonl` in that artifact and predicted as a file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.access import LOCAL, Actor, check_param_paths
from core.data.atomic import atomic_write_json
from core.data.corpus import Corpus, corpus_bytes, write_corpus
from core.data.selection_store import selected_indices, selection_dc, selection_meta
from core.data.stream import CorpusStream
from core.data.tags import Span, TagScheme
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.lm.models import resolve_model
from core.review.store import ReviewItem, ReviewStore, check_spans, check_type, review_set_key

PRED_KIND = "predictions"
SORT_KEYS = {"entities": "n_entities", "c1": "c1", "c2": "c2", "position": "index"}
REVIEW_STATES = ("unreviewed", "accepted", "rejected", "corrected")


# --------------------------------------------------------------------------- models


def list_ner_models(ws: Workspace) -> list[Path]:
    """Fine-tuned NER model folders (newest first): every model the run index knows (NER jobs, CLI runs, experiment
    and compare-sources cells, self-training, wherever their --out put them), plus folders found under runs/ and
    artifacts/ (older runs written before the index)."""
    from core.train.lineage import list_runs

    found: set[Path] = set()
    for base in (ws.runs_dir, ws.root / "artifacts"):
        for pattern in ("*/ner_config.json", "*/*/ner_config.json", "*/*/*/ner_config.json"):
            found.update(p.parent for p in base.glob(pattern))
    for entry in list_runs(ws):
        folder = Path(entry.model_dir) if entry.model_dir else None
        if folder is not None and (folder / "ner_config.json").is_file():
            found.add(folder)
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def list_mlm_models(ws: Workspace) -> list[Path]:
    """Model folders whose config says they carry a masked-LM head (MLM runs: B1)."""
    found = []
    for pattern in ("*/config.json", "*/*/config.json"):
        for p in ws.runs_dir.glob(pattern):
            try:
                arch = json.loads(p.read_text("utf-8")).get("architectures") or []
            except (OSError, json.JSONDecodeError):
                continue
            if any(a.endswith("ForMaskedLM") for a in arch):
                found.append(p.parent)
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def view_types(model: str | Path, rows: Sequence[dict[str, Any]] = (), reviews: dict[int, ReviewItem] | None = None) -> list[str]:
    """The entity types a view of this model's predictions shows and colours: the model's whole label set (its
    ner_config.json, i.e. LC's types) plus any other type found in the rows (gold spans) or reviews. Colours keyed
    on this stay put when a newly shown sentence holds a type not seen before, and the span editor offers every type."""
    cfg = resolve_model(str(model)).ner_config() or {}
    types = {label.split("-", 1)[1] for label in cfg.get("labels", []) if "-" in label}
    types |= {d["type"] for r in rows for key in ("spans", "gold_spans") for d in r.get(key) or []}
    types |= {s.type for it in (reviews or {}).values() for s in it.spans}
    return sorted(types)


# --------------------------------------------------------------------------- cached predictions


@dataclass
class PredictionRequest:
    key: str
    folder: Path
    model: str
    corpus: str
    corpus_hash: str
    indices: list[int] | None  # sentence indices of `corpus` (a selection), None = all

    @property
    def predictions_path(self) -> Path:
        return self.folder / "predictions.jsonl"

    @property
    def done(self) -> bool:
        return self.predictions_path.exists()

    @property
    def review_key(self) -> str:
        return review_set_key(self.corpus, self.corpus_hash)


def prediction_request(ws: Workspace, model: str | Path, corpus: str | None = None, selection: str | None = None,
                       actor: Actor = LOCAL) -> PredictionRequest:
    """What to predict and where the cached result lives (nothing is computed here). A model typed as a folder is
    checked for `actor` before anything reads it (its ner_config.json, and whether it exists at all)."""
    check_param_paths(actor, {"model": str(model), "selection": selection or ""}, ws.root)
    ref = resolve_model(str(model))
    if ref.ner_config() is None:
        raise UserError(f"{model} is not a fine-tuned NER model folder (no ner_config.json): pick a finished NER run")
    indices = None
    if selection:
        corpus = selection_dc(ws, selection_meta(ws, selection))
        if not ws.has_corpus(corpus):  # predictions are cached by the workspace corpus's hash and read from its Parquet
            raise UserError(f"selection {selection!r} was made on the file {corpus!r}, not a workspace corpus: import it "
                            "to inspect the selection's sentences here")
        indices = sorted(set(selected_indices(ws, selection)))
    if not corpus:
        raise UserError("choose a corpus or a saved selection to inspect")
    info = ws.corpus_info(corpus)
    if indices is not None and indices and indices[-1] >= info.sentences:
        raise UserError(f"selection points past the end of {corpus!r} ({info.sentences} sentences): was the DC replaced?")
    key = content_hash("predictions-v1", ref.fingerprint(), info.hash, indices)
    return PredictionRequest(key, ws.root / "artifacts" / PRED_KIND / key, str(ref.load_path), corpus, info.hash, indices)


def predict_job_params(ws: Workspace, req: PredictionRequest) -> dict[str, Any]:
    """Parameters for the "predict" job writing into the request's artifact folder."""
    folder = ws.artifact_dir(PRED_KIND, req.key)
    target: str = req.corpus
    if req.indices is not None:
        subset_path = folder / "subset.jsonl"
        if not subset_path.exists():
            # only the selected rows are read from DC's Parquet (a large DC is never loaded whole)
            rows = CorpusStream(path=ws.corpus_path(req.corpus), name=req.corpus).take(req.indices)
            write_corpus(rows, subset_path, fmt="jsonl")
        target = str(subset_path)
    atomic_write_json(folder / "meta.json", {"model": req.model, "corpus": req.corpus, "corpus_hash": req.corpus_hash,
                                             "indices": req.indices})
    return {"model": req.model, "corpus": target, "out": str(req.predictions_path)}


def predict_cached(ws: Workspace, req: PredictionRequest, progress: Any = None) -> Path:
    """Run the prediction in this process (CLI, tests) through the same job function."""
    if not req.done:
        from core.runner import jobs  # the runner imports every job's params, not this module: no loop

        jobs.run_inline(ws, "predict", predict_job_params(ws, req), progress=progress)
    return req.predictions_path


def load_predictions(req: PredictionRequest) -> list[dict[str, Any]]:
    """Prediction rows with `index` = sentence index in the request's corpus."""
    if not req.done:
        raise UserError("predictions are not computed yet: run the prediction first")
    rows = [json.loads(line) for line in req.predictions_path.read_text("utf-8").splitlines() if line.strip()]
    indices = req.indices if req.indices is not None else list(range(len(rows)))
    if len(indices) != len(rows):
        raise UserError(f"cached predictions in {req.folder} do not match the request; delete that folder and predict again")
    for row, i in zip(rows, indices):
        row["index"] = i
    return rows


def row_spans(row: dict[str, Any], key: str = "spans") -> list[Span]:
    return [Span.from_dict(d) for d in row.get(key) or []]


# --------------------------------------------------------------------------- the sentence table


def inspection_table(rows: Sequence[dict[str, Any]], reviews: dict[int, ReviewItem], selected: set[int] | None = None
                     ) -> pd.DataFrame:
    """One line per sentence: what the page sorts and filters on. `selection` is "selected" or
    "filtered" (not picked) when a saved selection over this corpus is given."""
    records = []
    for pos, row in enumerate(rows):
        i = row["index"]
        review = reviews.get(i)
        status = review.status if review is not None and review.status != "pending" else "unreviewed"
        records.append({"row": pos, "index": i, "text": " ".join(row["tokens"]), "n_entities": len(row.get("spans") or []),
                        "c1": float(row["c1"]), "c2": float(row["c2"]),
                        "types": sorted({d["type"] for d in row.get("spans") or []}),
                        "review": status,
                        "selection": "" if selected is None else ("selected" if i in selected else "filtered")})
    return pd.DataFrame.from_records(records, columns=["row", "index", "text", "n_entities", "c1", "c2", "types", "review",
                                                       "selection"])


def review_counts(df: pd.DataFrame) -> dict[str, int]:
    """How many of the table's sentences are decided, by status, and how many it holds: Inspect's progress line. Read
    from the table, not the review set: every view of a corpus shares one set (`corpus@hash`), so the set's own counts
    include sentences another view (the whole corpus, another selection) showed, and "5 of 2 reviewed" would follow.

    >>> review_counts(inspection_table([{"index": 0, "tokens": ["a"], "c1": 0, "c2": 0}], {}))
    {'accepted': 0, 'rejected': 0, 'corrected': 0, 'reviewed': 0, 'total': 1}
    """
    states = df["review"].value_counts().to_dict()
    out = {s: int(states.get(s, 0)) for s in ("accepted", "rejected", "corrected")}
    return {**out, "reviewed": sum(out.values()), "total": len(df)}


def filter_table(df: pd.DataFrame, query: str = "", types: Sequence[str] = (), min_entities: int = 0,
                 max_entities: int | None = None, review: Sequence[str] = (), selection: Sequence[str] = (),
                 sort_by: str = "entities", descending: bool = True) -> pd.DataFrame:
    """Filters combine with AND; `types` keeps sentences predicting any of the types; text search
    is case-insensitive and literal (no regex surprises from user input)."""
    keep = df["n_entities"] >= min_entities
    if max_entities is not None:
        keep &= df["n_entities"] <= max_entities
    if query.strip():
        keep &= df["text"].str.contains(query.strip(), case=False, regex=False)
    if types:
        wanted = set(types)
        keep &= df["types"].map(lambda ts: bool(wanted & set(ts)))
    if review:
        keep &= df["review"].isin(list(review))
    if selection:
        keep &= df["selection"].isin(list(selection))
    if sort_by not in SORT_KEYS:
        raise UserError(f"unknown sort key {sort_by!r}: expected one of {', '.join(SORT_KEYS)}")
    column = SORT_KEYS[sort_by]
    # stable sort with the sentence position as tie-break, so paging is deterministic
    return df[keep].sort_values([column, "index"], ascending=[not descending, True], kind="mergesort")


def spans_from_rows(rows: Sequence[dict[str, Any]], n_tokens: int) -> list[Span]:
    """Spans typed into the correction editor (start, end exclusive, type); blank rows ignored."""
    spans = []
    for r in rows:
        start, end, typ = r.get("start"), r.get("end"), r.get("type")
        if _blank(start) and _blank(end) and _blank(typ):
            continue
        if _blank(start) or _blank(end) or _blank(typ):
            raise UserError("every span needs a start, an end and a type")
        spans.append(Span(int(start), int(end), str(typ).strip()))
    return check_spans(spans, n_tokens)


def edit_spans(spans: Sequence[Span], tokens: Sequence[int], entity_type: str | None, n_tokens: int,
               remove: bool = False, fill: bool = False) -> list[Span]:
    """A span editor's Assign or Remove (Inspect, the review queue, adjudication): Assign with no type picked is a
    mistake said as such, never the removal that `apply_span_edit` reads a missing type as.

    >>> edit_spans([Span(0, 2, "PER")], [0, 1], None, 5)
    Traceback (most recent call last):
    core.errors.UserError: pick an entity type first
    """
    if not remove and not (entity_type or "").strip():
        raise UserError("pick an entity type first")
    return apply_span_edit(spans, tokens, None if remove else entity_type, n_tokens, fill=fill)


def apply_span_edit(spans: Sequence[Span], tokens: Sequence[int], entity_type: str | None, n_tokens: int,
                    fill: bool = False) -> list[Span]:
    """The token-grid edit: the selected token positions become spans of `entity_type` (one span
    per contiguous run), replacing every span they touch; `entity_type` None removes those spans.
    `fill`: the first and the last picked token bound one span, every token between them included (a range marked
    with two clicks, as a shift-click or a drag marks it). Returns the checked span list (no overlaps, inside the sentence).

    >>> apply_span_edit([], [0, 2], "LOC", 4, fill=True)
    [Span(start=0, end=3, type='LOC')]
    """
    picked = sorted({int(t) for t in tokens})
    if fill and picked:
        picked = list(range(picked[0], picked[-1] + 1))
    if not picked:
        raise UserError("select one or more tokens first")
    if picked[0] < 0 or picked[-1] >= n_tokens:
        raise UserError(f"token {picked[-1] if picked[-1] >= n_tokens else picked[0]} is outside the sentence of {n_tokens} tokens")
    chosen = set(picked)
    kept = [s for s in spans if not chosen & set(range(s.start, s.end))]
    if entity_type is not None:
        entity_type = check_type(entity_type, "marking a span")
        runs: list[list[int]] = []
        for t in picked:
            if runs and t == runs[-1][-1] + 1:
                runs[-1].append(t)
            else:
                runs.append([t])
        kept += [Span(r[0], r[-1] + 1, entity_type) for r in runs]
    return check_spans(kept, n_tokens)


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip())


# --------------------------------------------------------------------------- export


def export_bytes(store: ReviewStore, fmt: str = "conll", scheme: str = "bio", reviewers: Sequence[str] | None = None) -> bytes:
    """Accepted + corrected sentences (only reviewed ones; of `reviewers` when given) as CoNLL or
    JSONL in BIO or BIOES."""
    if fmt not in ("conll", "jsonl"):
        raise UserError(f"export format must be conll or jsonl, got {fmt!r}")
    return corpus_bytes(store.export_corpus(reviewers=reviewers), fmt, TagScheme(scheme))


def save_reviewed_corpus(ws: Workspace, store: ReviewStore, name: str, role: str | None = None,
                         reviewers: Sequence[str] | None = None, actor: Actor = LOCAL) -> Any:
    """Store the reviewed sentences as a workspace corpus (to add to LC or train on)."""
    corpus: Corpus = store.export_corpus(name=name, reviewers=reviewers)
    return ws.save_corpus(corpus, name, role=role, source=f"review of {store.set_key}", actor=actor)
