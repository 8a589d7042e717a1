"""Text from outside shown as what it is: invisible format characters (bidi overrides and isolates, zero-width
spaces and joiners, BOM: Unicode category Cf) written out, as code hosts warn of hidden Unicode, and right-to-left
names isolated so they cannot reorder what follows them ("RTL \u202eevil" displayed as "RTL live"; a Hebrew task
name scrambling the task id after it).
"""

from __future__ import annotations

import re
import unicodedata


def hidden_chars(text: str) -> list[str]:
    """Invisible format characters in `text` (bidi overrides and isolates, zero-width spaces and joiners, BOM: Unicode
    category Cf), which can make a token display as something else ("RTL \u202eevil" shows as "RTL live").

    >>> hidden_chars("RTL \u202eevil\u202c"), hidden_chars("plain")
    (['U+202E', 'U+202C'], [])
    """
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cf"]


def visible(text: str) -> str:
    """`text` with each invisible format character written out as ⟨U+XXXX⟩, as code hosts warn of hidden Unicode:
    for plain-text places (widget labels, tables). `html_visible` is the same for HTML.

    >>> visible("pa\u200bper")
    'pa⟨U+200B⟩per'
    """
    return "".join(f"⟨U+{ord(c):04X}⟩" if unicodedata.category(c) == "Cf" else c for c in text)


def isolated(text: str) -> str:
    """`text` made visible and wrapped in a first-strong isolate (U+2068 ... U+2069), for plain-text labels that put
    something after a name: a right-to-left name then cannot move the id that follows it.

    >>> isolated("דנה") + " · 1234" == "\u2068דנה\u2069 · 1234"
    True
    """
    return f"\u2068{visible(text)}\u2069"


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$=])")


def markdown_literal(text: str) -> str:
    r"""`text` (a corpus sentence, a name) shown as itself inside st.markdown: every Markdown character escaped, so
    `![x](https://host/?t)` in a DC sentence loads no remote image, `[click](https://...)` is no live link, and
    Streamlit's `:red[...]` and `$...$` change nothing; invisible characters written out (`visible`).

    >>> markdown_literal("![x](http://e/?t) :red[a] $x$")
    '\\!\\[x\\]\\(http\\://e/?t\\) \\:red\\[a\\] \\$x\\$'
    """
    return _MARKDOWN.sub(r"\\\1", visible(text))
