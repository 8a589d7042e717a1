"""The Selection page's panels about one saved selection: the entity words it adds to TC, DEV/TEST text in it, and
why a sentence was chosen (each a core function, cached per workspace and input)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.data.selection import Selection
from core.data.showtext import markdown_literal
from core.data.workspace import CorpusRole, Workspace
from core.selection.coverage import selection_coverage
from core.selection.explain import explain_sentence
from core.selection.leakage import THRESHOLD as LEAK_THRESHOLD
from core.selection.leakage import check_leakage
from ui import corpus_picker, run_guarded


@st.cache_data(show_spinner="Counting entity words...", max_entries=16)
def _coverage(labeled: str, tc: str, key: str, root: str, hashes: tuple[str, str]):
    del hashes  # part of the cache key: a corpus re-imported under the same name is counted again
    return selection_coverage(Workspace(root), labeled, tc, [key])


def coverage_panel(ws: Workspace, view_key: str) -> None:
    with st.expander("Entity coverage: which entity words of a labeled corpus this selection adds to TC"):
        st.caption("MLM on TC + SC can only teach the encoder entity words that occur in it. If TC already holds nearly "
                   "every entity word of your DEV/TEST, a selection has little to add over TAPT; the gap it closes is "
                   "what it can bring. Words are compared case-folded.")
        cv1, cv2 = st.columns(2)
        with cv1:
            cov_labeled = corpus_picker(ws, "Labeled corpus", CorpusRole.DEV, key="sel_cov_labeled", labeled=True)
        with cv2:
            cov_tc = corpus_picker(ws, "Task corpus (TC)", CorpusRole.TC, key="sel_cov_tc")
        if cov_labeled and cov_tc:
            hashes = (ws.corpus_info(cov_labeled).hash, ws.corpus_info(cov_tc).hash)
            cov = run_guarded(lambda: _coverage(cov_labeled, cov_tc, view_key, str(ws.root), hashes), "Could not measure coverage")
            if cov is not None:
                st.markdown(f"**{cov.labeled}**: {cov.mentions:,} entity mentions, {cov.entity_words:,} distinct entity "
                            f"words, **{cov.missing_from_tc:,}** of them not in TC.")
                st.dataframe(cov.frame(), hide_index=True, key="sel_cov_table",
                             column_config={c: st.column_config.NumberColumn(format="%.1f")
                                            for c in ("entity words %", "mentions %", "TC's gap closed %")})
                for words in cov.added_examples.values():
                    if words:
                        st.caption(f"Adds, most frequent first: {markdown_literal(', '.join(words))}")
                types = cov.type_frame()
                st.dataframe(types, key="sel_cov_types",
                             column_config={c: st.column_config.NumberColumn(format="%.1f") for c in types.columns})


@st.cache_data(show_spinner="Checking for DEV/TEST text in the selection...", max_entries=16)
def _leakage(key: str, against: tuple[str, ...], root: str, hashes: tuple[str, ...]):
    del hashes  # part of the cache key
    return check_leakage(Workspace(root), key, list(against))


def leakage_panel(ws: Workspace, view_key: str) -> None:
    with st.expander("Leakage: does this selection contain DEV/TEST sentences?"):
        st.caption(f"Exact duplicates after case folding and dropping punctuation, and near duplicates (verified Jaccard of "
                   f"word 2-grams >= {LEAK_THRESHOLD}): MLM on them would have seen the evaluation text. An experiment checks "
                   "TC and DC itself, refuses DEV text in TC and drops DEV/TEST duplicates from TC and DC before MLM. "
                   "CLI: `python -m core leakage --corpus KEY --against dev,test --json`.")
        labeled = [n for n in (ws.corpus_for_role(CorpusRole.DEV), ws.corpus_for_role(CorpusRole.TEST)) if n]
        against = st.multiselect("Check against", [i.name for i in ws.list_corpora() if i.labeled], default=labeled,
                                 key="sel_leak_against")
        if against and st.button("Check leakage", key="sel_leak_run"):
            leak = run_guarded(lambda: _leakage(view_key, tuple(against), str(ws.root),
                                                tuple(ws.corpus_info(a).hash for a in against)), "Could not check leakage")
            if leak is not None:
                if leak.exact or leak.near:
                    st.warning(f"{leak.exact:,} exact and {leak.near:,} near duplicates of {', '.join(against)} among "
                               f"{leak.sentences:,} selected sentences.")
                    st.dataframe(pd.DataFrame(leak.examples), hide_index=True, key="sel_leak_examples")
                else:
                    st.success(f"No sentence of {', '.join(against)} among the {leak.sentences:,} selected sentences.")


@st.cache_data(show_spinner="Explaining the sentence...", max_entries=32)
def _explain(key: str, index: int, labeled: str | None, root: str):
    return explain_sentence(Workspace(root), key, index, labeled)


def why_panel(ws: Workspace, sel: Selection, view_key: str) -> None:
    with st.expander("Why this sentence: its rank under every strategy, nearest TC sentences, DSIR n-grams, entity words"):
        st.caption("Give a DC index from the ranking below (column dc_index). Ranks are on one scale, the percentile "
                   "(100 = ranked first), under every saved selection of this DC. CLI: `python -m core select explain KEY INDEX`.")
        e1, e2 = st.columns([1, 2])
        why_index = e1.number_input("DC index", 0, max(sel.dc_size - 1, 0), int(sel.indices[0]) if len(sel.indices) else 0,
                                    key="sel_why_index")
        with e2:
            why_labeled = corpus_picker(ws, "Entity words of", CorpusRole.TEST, key="sel_why_labeled", labeled=True, allow_none=True)
        if st.button("Explain", key="sel_why_run"):
            why = run_guarded(lambda: _explain(view_key, int(why_index), why_labeled, str(ws.root)), "Could not explain")
            if why is not None:
                st.markdown(f"**DC #{why['dc_index']}**: {markdown_literal(why['text'])}")
                st.dataframe(pd.DataFrame(why["ranks"]).drop(columns=["selection"]), hide_index=True, key="sel_why_ranks")
                c = st.columns(2)
                c[0].markdown(f"**Nearest TC sentences** ({why['encoder']})")
                c[0].dataframe(pd.DataFrame(why["nearest_tc"]), hide_index=True, key="sel_why_tc")
                c[1].markdown(f"**DSIR log-weight {why['dsir']['log_weight']:.3f}**: its n-grams, log p_TC - log p_DC")
                c[1].dataframe(pd.DataFrame(why["dsir"]["ngrams"]), hide_index=True, key="sel_why_ngrams")
                if "entity_words_added" in why:
                    words = why["entity_words_added"]["words"]
                    st.caption(f"Entity words of {markdown_literal(str(why_labeled))} it holds that TC lacks: "
                               f"{markdown_literal(', '.join(words)) or '(none)'}")
