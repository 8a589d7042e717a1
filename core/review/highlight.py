"""HTML for entity spans: inline highlights with a type label on each span, gold-vs-predicted
marks, and original-vs-augmented diffs. Built here (not in the page) so it is tested; every
token and type passes through html.escape, so a corpus cannot inject markup into the app.

Colour is never the only signal: each span carries its type as text, and a mismatch carries
a symbol (✗ spurious or wrong type, ∅ missed) besides its dashed border.

>>> colors = type_colors(["PER"])
>>> "PER" in sentence_html(["Ada", "wrote"], [Span(0, 1, "PER")], colors)
True
"""

from __future__ import annotations

import html
import json
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from core.data.showtext import visible
from core.data.tags import Span

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def _palette() -> dict:
    """Span colours from assets/palette.json: designers change colours there, not in Python."""
    return json.loads((ASSETS / "palette.json").read_text("utf-8"))


_P = _palette()
PALETTE: tuple[str, ...] = tuple(_P["types"])
MISMATCH: str = _P["mismatch"]
CHANGED: str = _P["changed"]
REVIEW_COLORS: dict[str, str] = dict(_P["review"])
_SPANS_CSS = f":root{{--nx-mismatch:{MISMATCH};--nx-changed:{CHANGED}}}\n{(ASSETS / 'spans.css').read_text('utf-8')}"
CSS = f"<style>{_SPANS_CSS}</style>"


def page_css() -> str:
    """Span rules plus the page-level ones (review-state cards, token grid) from assets/page.css,
    in one <style> block. No "<" followed by a letter may appear in assets/*.css, comments included:
    Streamlit's HTML sanitiser (DOMPurify) then drops the whole block."""
    return f"<style>{_SPANS_CSS}\n{(ASSETS / 'page.css').read_text('utf-8')}</style>"


def type_colors(types: Iterable[str]) -> dict[str, str]:
    """One colour per entity type, stable for a given set of types (sorted order)."""
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(sorted(set(types)))}


def legend_html(colors: dict[str, str], gold: bool = True, suggested: bool = False) -> str:
    """Type colours; the gold-mismatch marks only when gold spans are shown (not on unlabeled DC); the suggestion mark
    when a review task pre-filled a model's spans."""
    items = "".join(f'<span class="nx-ent" style="background:{c}">{html.escape(t)}</span>' for t, c in colors.items())
    marks = ('<span class="nx-ent nx-bad">✗ prediction not in gold</span>'
             '<span class="nx-ent nx-bad">∅ gold span missed</span>') if gold else ""
    marks += '<span class="nx-ent nx-sug">? suggested by the model</span>' if suggested else ""
    return f'{CSS}<div class="nx-legend nx-sent">{items}{marks}</div>'


def span_diff(predicted: Sequence[Span], gold: Sequence[Span]) -> tuple[dict[Span, str], dict[Span, str]]:
    """Exact-match comparison, as span F1 counts it: a predicted span is "ok" when the same
    boundaries and type are in gold, "wrong" otherwise; a gold span is "ok" or "missed"."""
    gold_set, pred_set = set(gold), set(predicted)
    return ({s: "ok" if s in gold_set else "wrong" for s in predicted},
            {s: "ok" if s in pred_set else "missed" for s in gold})


def _tokens_html(tokens: Sequence[str], spans: Sequence[Span], colors: dict[str, str],
                 marks: dict[Span, str] | None = None, changed: set[int] | None = None, hits: set[int] | None = None) -> str:
    marks = marks or {}
    changed = changed or set()
    hits = hits or set()
    starts = {s.start: s for s in sorted(spans, key=lambda s: (s.start, -s.end))}
    parts: list[str] = []
    i = 0
    while i < len(tokens):
        span = starts.get(i)
        if span is None or span.end <= i:
            parts.append(_token(tokens[i], i in changed, i in hits))
            i += 1
            continue
        end = min(span.end, len(tokens))
        inner = " ".join(_token(tokens[j], j in changed, j in hits) for j in range(i, end))
        mark = marks.get(span, "ok")
        bad = mark in ("wrong", "missed")
        symbol = {"wrong": "✗ ", "missed": "∅ ", "suggested": "? "}.get(mark, "")
        color = colors.get(span.type, PALETTE[-1])
        note = {"suggested": " (the model's suggestion: yours once accepted or saved)"}.get(mark, f" ({mark})" if bad else "")
        title = html.escape(f"{span.type} [{span.start}:{span.end}]{note}", quote=True)
        extra = " nx-bad" if bad else " nx-sug" if mark == "suggested" else ""
        parts.append(f'<span class="nx-ent{extra}" style="background:{color}" title="{title}">'
                     f'{inner}<span class="nx-lbl">{symbol}{html.escape(span.type)}</span></span>')
        i = end
    return " ".join(parts)


def html_visible(text: str) -> str:
    """`text` escaped for HTML (quotes too), each invisible format character shown as a marked ⟨U+XXXX⟩."""
    return "".join(f'<span class="nx-hidden" title="hidden character">⟨U+{ord(c):04X}⟩</span>'
                   if unicodedata.category(c) == "Cf" else html.escape(c, quote=True) for c in text)


def token_labels(tokens: Sequence[str]) -> list[str]:
    """One label per token for a token picker, unique within the sentence: a word that occurs twice carries its
    position (Streamlit's pills and multiselect map a label back to the first option with that text, so two equal
    labels would store a span on the wrong token). Hidden characters are written out; an empty token says so.

    >>> token_labels(["The", "paper", "won", "the", "best", "paper", "award"])
    ['The', 'paper ·2', 'won', 'the', 'best', 'paper ·6', 'award']
    >>> token_labels(["x ·2", "x", "x"])
    ['x ·2 ·1', 'x ·2', 'x ·3']
    """
    shown = [visible(t) if t.strip() else f"⟨{'empty' if not t else 'space'}⟩" for t in tokens]
    counts = Counter(shown)
    labels = [f"{label} ·{i + 1}" if counts[label] > 1 else label for i, label in enumerate(shown)]
    if len(set(labels)) < len(labels):  # a token that reads like a numbered one ("x ·2" beside two "x"): every
        labels = [f"{label} ·{i + 1}" for i, label in enumerate(shown)]  # label carries its position, unique by it
    return labels


def _token(token: str, changed: bool, hit: bool = False) -> str:
    text = html_visible(token)
    text = f"<mark>{text}</mark>" if hit else text
    return f'<span class="nx-chg">{text}</span>' if changed else text


def query_hits(tokens: Sequence[str], query: str) -> set[int]:
    """Token positions inside a case-insensitive literal match of `query` in the space-joined sentence (the same
    match core.data.browse filters with), so a search highlights what it found.

    >>> sorted(query_hits(["New", "York", "is", "big"], "york is"))
    [1, 2]
    >>> sorted(query_hits(["İZMİR", "VE", "ANKARA"], "ve"))  # 'İ'.lower() is two characters: bounds from lowered tokens
    [1]
    """
    q = query.strip().lower()
    if not q:
        return set()
    lowered = [t.lower() for t in tokens]  # lowered joined equals joined lowered: lowering maps each character alone
    text = " ".join(lowered)
    bounds, pos = [], 0
    for t in lowered:
        bounds.append((pos, pos + len(t)))
        pos += len(t) + 1
    found: set[int] = set()
    at = text.find(q)
    while at >= 0:
        found |= {i for i, (a, b) in enumerate(bounds) if a < at + len(q) and b > at}
        at = text.find(q, at + 1)
    return found


def browse_rows_html(rows: Sequence[dict], query: str = "", colors: dict[str, str] | None = None) -> str:
    """Corpus browser rows as sentences: entities coloured from their tags (not "O O B-album"), the search match
    marked, the whole sentence wrapped (no cut-off cells)."""
    from core.data.tags import detect_scheme, spans_from_tags

    out = []
    for row in rows:
        tokens = str(row.get("text", "")).split(" ")
        tags = str(row["tags"]).split(" ") if row.get("tags") else None
        spans = spans_from_tags(tags, detect_scheme([tags])) if tags and len(tags) == len(tokens) else []
        palette = colors if colors is not None else type_colors(s.type for s in spans)
        out.append(f'<div class="nx-sent"><span class="nx-idx">{int(row.get("index", 0)):,}</span> '
                   f"{_tokens_html(tokens, spans, palette, hits=query_hits(tokens, query))}</div>")
    return "".join(out)


def sentence_html(tokens: Sequence[str], spans: Sequence[Span], colors: dict[str, str],
                  marks: dict[Span, str] | None = None, changed: set[int] | None = None) -> str:
    return f'<div class="nx-sent">{_tokens_html(tokens, spans, colors, marks, changed)}</div>'


def prediction_html(tokens: Sequence[str], predicted: Sequence[Span], colors: dict[str, str],
                    gold: Sequence[Span] | None = None, label: str = "pred") -> str:
    """Predicted spans; with gold, a second line with the gold spans and mismatches marked on both."""
    if gold is None:
        return sentence_html(tokens, predicted, colors)
    pred_marks, gold_marks = span_diff(predicted, gold)
    return (f'<div class="nx-row nx-sent"><span class="nx-tag">{html.escape(label)}</span>'
            f'<span>{_tokens_html(tokens, predicted, colors, pred_marks)}</span></div>'
            f'<div class="nx-row nx-sent"><span class="nx-tag">gold</span>'
            f'<span>{_tokens_html(tokens, gold, colors, gold_marks)}</span></div>')


def changed_positions(original: Sequence[str], generated: Sequence[str]) -> set[int]:
    return {i for i, (a, b) in enumerate(zip(original, generated)) if a != b}


def augmented_html(original: Sequence[str], generated: Sequence[str], spans: Sequence[Span], colors: dict[str, str]) -> str:
    """Original and generated sentence side by side (same labels), replaced tokens highlighted."""
    changed = changed_positions(original, generated)
    return (f'<div class="nx-row nx-sent"><span class="nx-tag">orig</span>'
            f'<span>{_tokens_html(original, spans, colors)}</span></div>'
            f'<div class="nx-row nx-sent"><span class="nx-tag">new</span>'
            f'<span>{_tokens_html(generated, spans, colors, changed=changed)}</span></div>')
