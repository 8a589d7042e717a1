"""Corpora: load TC / DC / LC / DEV / TEST, give them roles, see statistics and previews."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.access import LOCAL, server_roots_text
from core.data.browse import browse_corpus, filter_fields
from core.data.corpus import FORMAT_CHOICES
from core.data.showtext import markdown_literal
from core.data.stats import corpus_stats, length_histogram
from core.data.uploads import discard_upload, stage_upload
from core.data.workspace import ROLE_LABELS, CorpusRole
from core.review.highlight import browse_rows_html, page_css, type_colors
from ui import actor, get_workspace, job_status, latest_job, run_guarded, submit_job

ws = get_workspace()
st.title("Corpora")
st.caption("A task-level corpus (TC), a large domain-level corpus (DC), a small labeled corpus (LC) and its DEV/TEST splits. "
           "Formats: plain text (one sentence per line), CoNLL (token … tag), CoNLL-U, JSONL, CSV, Parquet.")

ROLE_OPTIONS = [None, *CorpusRole]


def _role_label(r: CorpusRole | None) -> str:
    return "(no role)" if r is None else ROLE_LABELS[r]


@st.cache_data(show_spinner="Computing statistics...", max_entries=32)
def cached_stats(name: str, content_hash: str) -> tuple[dict, list[int]]:
    del content_hash  # part of the cache key: a re-imported corpus gets fresh statistics
    corpus = ws.load_corpus(name)
    return corpus_stats(corpus), length_histogram(corpus)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_filter_fields(name: str, content_hash: str) -> dict[str, list[str]]:
    del content_hash
    return filter_fields(ws, name)


def browse_corpus_panel(name: str, content_hash: str) -> None:
    """Search, filter by a field and page through every sentence (not only the first rows)."""
    fields = cached_filter_fields(name, content_hash)
    c = st.columns([3, 2, 3, 1])
    query = c[0].text_input("Search text", key=f"browse_query_{name}", placeholder="words in the sentence")
    field = c[1].selectbox("Filter by field", [None, *fields], key=f"browse_field_{name}",
                           format_func=lambda f: "(no filter)" if f is None else f, disabled=not fields)
    values = c[2].multiselect("Values", fields.get(field, []), key=f"browse_values_{name}_{field}", disabled=field is None)
    per_page = int(c[3].selectbox("Rows", [25, 50, 100, 200], index=1, key=f"browse_per_page_{name}"))
    page_key = f"browse_page_{name}_{hash((query, field, tuple(values), per_page))}"  # a new search starts on page 1
    result = run_guarded(lambda: browse_corpus(ws, name, query, field, values, st.session_state.get(page_key, 0), per_page))
    if result is None:
        return
    st.session_state[page_key] = result.page
    n = st.columns([1, 1, 6])
    n[0].button("Previous", key=f"browse_prev_{name}", disabled=result.page == 0,
                on_click=lambda: st.session_state.update({page_key: result.page - 1}))
    n[1].button("Next", key=f"browse_next_{name}", disabled=result.page >= result.pages - 1,
                on_click=lambda: st.session_state.update({page_key: result.page + 1}))
    shown = f"{result.page * per_page + 1:,}-{result.page * per_page + len(result.rows):,}" if result.rows else "0"
    n[2].caption(f"Page {result.page + 1} of {result.pages} · showing {shown} of {result.matches:,} matching sentences "
                 f"({result.total:,} in the corpus)")
    show = st.radio("Show", ["sentences", "table"], horizontal=True, key=f"browse_show_{name}", label_visibility="collapsed",
                    help="sentences: entities coloured, search matches marked, long sentences wrapped; table: every field")
    if show == "sentences":
        st.html(page_css() + browse_rows_html(result.rows, query, type_colors(ws.corpus_info(name).entity_types)))
    else:
        st.dataframe(pd.DataFrame(result.rows), hide_index=True, width="stretch", key="preview_table")


FORMAT_OPTIONS = list(FORMAT_CHOICES)
FORMAT_HELP = ("auto: by the file's extension; a .txt whose lines mostly end in a tag is read as CoNLL. "
               "Name the format when the guess is wrong.")
load_tab, path_tab = st.tabs(["Upload a file", "Path on the server"])
with load_tab, st.form("upload_form", clear_on_submit=False):
    upload = st.file_uploader("Corpus file", key="upload_file",
                              type=["txt", "conll", "bio", "iob", "tsv", "conllu", "jsonl", "json", "csv", "parquet"])
    c1, c2, c3 = st.columns([2, 2, 1])
    up_role = c1.selectbox("Role", ROLE_OPTIONS, format_func=_role_label, key="upload_role")
    up_name = c2.text_input("Name in the workspace", key="upload_name", placeholder="default: the file name")
    up_format = c3.selectbox("Format", FORMAT_OPTIONS, key="upload_format", help=FORMAT_HELP)
    up_overwrite = st.checkbox("Replace a different corpus of the same name", key="upload_overwrite")
    st.caption("The file is kept in the workspace and read by a background job: you can close the tab meanwhile.")
    if st.form_submit_button("Import", type="primary") and upload is not None:
        staged = run_guarded(lambda: stage_upload(ws, upload.name, upload.getvalue(), actor=actor()), "Could not import")
        if staged is not None and submit_job(
                "import", {"path": str(staged), "upload": upload.name, "role": up_role.value if up_role else None,
                           "name": up_name or None, "format": up_format, "overwrite": up_overwrite},
                "corpora_import_job") is None:
            discard_upload(ws, staged)  # refused (said above): the copy would wait a week for the sweep

with path_tab, st.form("path_form"):
    path = st.text_input("File path on the server", key="path_input", placeholder="/data/dc.txt")
    c1, c2, c3 = st.columns([2, 2, 1])
    p_role = c1.selectbox("Role", ROLE_OPTIONS, format_func=_role_label, key="path_role")
    p_name = c2.text_input("Name in the workspace", key="path_name", placeholder="default: the file name")
    p_format = c3.selectbox("Format", FORMAT_OPTIONS, key="path_format", help=FORMAT_HELP)
    p_overwrite = st.checkbox("Replace a different corpus of the same name", key="path_overwrite")
    st.caption("Large files are streamed in chunks by a background job: you can close the tab meanwhile."
               + ("" if actor() == LOCAL else f" With accounts, only files under {server_roots_text()} can be named."))
    if st.form_submit_button("Import in the background") and path:
        submit_job("import", {"path": path, "role": p_role.value if p_role else None, "name": p_name or None,
                              "format": p_format, "overwrite": p_overwrite}, "corpora_import_job")



def _show_imported(job) -> None:
    """Once per finished import of this session: its corpus becomes the one inspected below."""
    if st.session_state.get("corpora_import_shown") != job.id and isinstance(job.outcome.extra.get("name"), str):
        st.session_state["corpora_import_shown"] = job.id
        st.session_state["corpus_view"] = job.outcome.extra["name"]


import_job = latest_job("import", "corpora_import_job")
if import_job is not None and (import_job.active or st.session_state.get("corpora_import_job") == import_job.id):
    job_status(import_job, on_done=_show_imported)

infos = ws.list_corpora()
if not infos:
    st.info("The workspace has no corpora yet.")
    st.stop()

st.subheader("Workspace corpora")
holders = {n: r.value.upper() for r, n in ws.roles().items()}  # the settings are the truth: one corpus per role
table = pd.DataFrame([{"name": i.name, "role": holders.get(i.name, ""), "sentences": i.sentences, "tokens": i.tokens,
                       "labeled": i.labeled, "scheme": i.tag_scheme, "fields": ", ".join(i.fields),
                       "source": i.source} for i in infos])
st.dataframe(table, hide_index=True, width="stretch", key="corpora_table")

names = [i.name for i in infos]
current = st.session_state.get("corpus_view")
name = st.selectbox("Inspect a corpus", names, index=names.index(current) if current in names else 0, key="corpus_view")
info = ws.corpus_info(name)

with st.expander("Role", expanded=False):
    role_now = next((r for r, n in ws.roles().items() if n == name), None)
    new_role = st.selectbox("Role of this corpus", ROLE_OPTIONS, index=ROLE_OPTIONS.index(role_now), format_func=_role_label,
                            key=f"role_select_{name}")
    if new_role != role_now and st.button("Set role", key=f"set_role_{name}"):
        notes = run_guarded(lambda: ws.set_role(name, new_role, actor=actor()), "Could not set the role")
        if notes is not None:
            st.session_state["role_notes"] = notes  # shown after the rerun that redraws the roles
            st.rerun()
    for note in st.session_state.pop("role_notes", []):
        st.warning(markdown_literal(note))

stats, lengths = cached_stats(name, info.hash)
m = st.columns(5)
m[0].metric("Sentences", f"{stats['sentences']:,}")
m[1].metric("Tokens", f"{stats['tokens']:,}")
m[2].metric("Vocabulary", f"{stats['vocab']:,}")
m[3].metric("Type-token ratio", f"{stats['ttr']:.3f}")
m[4].metric("Mean length", f"{stats['mean_length']:.1f}")

left, right = st.columns(2)
fig = px.histogram(x=lengths, nbins=min(60, max(10, stats["max_length"])), labels={"x": "tokens per sentence"},
                   title="Sentence length")
fig.update_layout(yaxis_title="sentences", height=320, margin=dict(t=40, b=10))
left.plotly_chart(fig, key="length_hist")
if stats["labeled"]:
    types = stats["entity_types"]
    fig = px.bar(x=list(types.values()), y=list(types), orientation="h", labels={"x": "spans", "y": "entity type"},
                 title=f"Entity types · scheme {stats['tag_scheme'].upper()} · {stats['entities_per_sentence']:.2f} per sentence")
    fig.update_layout(height=320, margin=dict(t=40, b=10), yaxis={"categoryorder": "total ascending"})
    right.plotly_chart(fig, key="entity_bar")
elif stats.get("field_counts"):
    key, counts = next(iter(stats["field_counts"].items()))
    fig = px.bar(x=list(counts), y=list(counts.values()), labels={"x": key, "y": "sentences"}, title=f"Sentences per {key}")
    fig.update_layout(height=320, margin=dict(t=40, b=10))
    right.plotly_chart(fig, key="field_bar")
else:
    right.info("Unlabeled corpus: no entity statistics.")

st.subheader("Sentences")
browse_corpus_panel(name, info.hash)

with st.expander("Delete this corpus"):
    if st.button(f"Delete {name!r}", key=f"delete_{name}", type="secondary"):
        if run_guarded(lambda: ws.delete_corpus(name, actor=actor()) or True, "Could not delete"):
            st.session_state.pop("corpus_view", None)
            st.rerun()
