"""Issue 43.5: hidden characters are shown, not obeyed: a bidi override in a token is written out in every span HTML
(corpus browser, Inspect, queue, Agreement), a zero-width space inside a token is visible, and a right-to-left task
name cannot reorder the id after it in a picker."""

from __future__ import annotations

from core.data.showtext import hidden_chars, isolated, visible
from core.data.tags import Span
from core.review.highlight import browse_rows_html, sentence_html, type_colors
from core.team.tasks import Task


def test_bidi_and_zero_width_characters_are_written_out_in_span_html():
    tokens = ["RTL", "\u202eevil\u202c", "pa\u200bper"]
    html = sentence_html(tokens, [Span(1, 2, "PER")], type_colors(["PER"]))
    assert "\u202e" not in html and "\u200b" not in html
    assert html.count("⟨U+202E⟩") == 1 and "⟨U+200B⟩" in html and 'class="nx-hidden"' in html
    browsed = browse_rows_html([{"index": 0, "text": " ".join(tokens), "tags": None}])
    assert "\u202e" not in browsed and "⟨U+202E⟩" in browsed


def test_plain_text_labels_show_hidden_characters_and_isolate_right_to_left_names():
    assert visible("a\u200bb") == "a⟨U+200B⟩b" and hidden_chars("a\u2066b\u2069") == ["U+2066", "U+2069"]
    task = Task("20261126-abc123", "משימה \u202e", "corpus x", "x", "h", ["ann"], 0.0, "", [], "rita", 0.0)
    assert task.label == "\u2068משימה ⟨U+202E⟩\u2069 · 20261126-abc123"
    assert isolated("x").startswith("\u2068") and isolated("x").endswith("\u2069")
