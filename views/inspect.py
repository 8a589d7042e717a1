"""Inspect: predicted entities highlighted, annotator review (accept / reject / correct), export;
self-training and MLM augmentation (Tokarchuk et al. 2021) as background jobs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import augment as aug
from core import inspect as insp
from core.corpus import corpus_bytes, read_corpus
from core.highlight import CSS, augmented_html, legend_html, prediction_html, type_colors
from core.review import ReviewConflict, ReviewStore
from core.tags import spans_from_tags
from core.workspace import Role
from ui import corpus_picker, get_workspace, job_status, latest_job, run_guarded, short_path, submit_job

ws = get_workspace()
PER_PAGE = 10
OTHER = "(another folder)"
st.title("Inspect NER predictions")
st.html(CSS)


def model_picker(label: str, key: str, models: list, optional: bool = False) -> str | None:
    options = ([None] if optional else []) + [str(p) for p in models] + [OTHER]
    choice = st.selectbox(label, options, key=key, format_func=lambda p: "(none)" if p is None else p if p == OTHER else short_path(p))
    return st.text_input("Model folder or Hugging Face id", key=f"{key}_path") if choice == OTHER else choice


def source_picker(prefix: str, role: Role) -> tuple[str | None, str | None]:
    """(corpus, selection key): sentences of a workspace corpus or of a saved selection."""
    sels = insp.list_selections(ws)
    if sels and st.radio("Sentences from", ["corpus", "saved selection"], key=f"{prefix}_source", horizontal=True) != "corpus":
        sel = st.selectbox("Selection", sels, key=f"{prefix}_sel", format_func=lambda s: s.label)
        return None, sel.key
    return corpus_picker(ws, "Corpus", role, key=f"{prefix}_corpus"), None


def predictions_ready(req: insp.PredictionRequest, state_key: str, what: str) -> bool:
    """True when cached; otherwise offer (or follow) the prediction job."""
    if req.done:
        return True
    job = latest_job("predict", state_key)
    if job is not None and job.params.get("out") == str(req.predictions_path):
        job_status(job, cancel_key=state_key)
        if job.active:
            return False
    if st.button(f"Predict {what}", key=f"{state_key}_go", type="primary"):
        params = run_guarded(lambda: insp.predict_job_params(ws, req))
        if params and submit_job("predict", params, state_key):
            st.rerun()
    return False


@st.cache_data(max_entries=8, show_spinner=False)
def load_rows(key: str, _req: insp.PredictionRequest) -> list[dict]:
    del key  # the cache key: content hash of model, corpus and selection
    return insp.load_predictions(_req)


def decide(set_key: str, index: int, status: str, version: int | None, tokens: list, spans: list, model: str) -> None:
    """Button callback: runs before the rerun, with the version the reviewer saw on screen."""
    try:
        ReviewStore(ws, set_key).save(index, status, tokens, spans, expected_version=version, model=model)
        st.session_state.pop("insp_conflict", None)
        st.session_state.pop("insp_edit", None)
        if st.session_state.get("insp_cursor_index") == index:
            move_cursor(1)
    except ReviewConflict as exc:
        st.session_state["insp_conflict"] = (str(exc), (set_key, index, status, None, tokens, spans, model))


def move_cursor(step: int) -> None:
    st.session_state["insp_cursor"] = st.session_state.get("insp_cursor", 0) + step


def review_tab() -> None:
    c = st.columns([2, 2, 2])
    with c[0]:
        model = model_picker("NER model (finished run)", "insp_model", insp.list_ner_models(ws))
    with c[1]:
        corpus, sel_key = source_picker("insp", Role.DC)
    status_sel = None
    if corpus and (over := [s for s in insp.list_selections(ws) if s.dc == corpus]):
        with c[2]:
            status_sel = st.selectbox("Selected-vs-filtered status from", [None, *over], key="insp_status_sel",
                                      format_func=lambda s: "(no selection)" if s is None else s.label)
    if not model:
        st.info("Train a NER model on the Training page (or name a model folder) to inspect its predictions.")
        return
    req = run_guarded(lambda: insp.prediction_request(ws, model, corpus, sel_key))
    if req is None or not predictions_ready(req, "insp_predict_job", "entities"):
        return
    rows = load_rows(req.key, req)
    store = ReviewStore(ws, req.review_key)
    selected = set(req.indices) if req.indices is not None else set(insp.selected_indices(status_sel)) if status_sel else None
    items = store.items()
    df = insp.inspection_table(rows, items, selected)
    types = sorted({t for ts in df["types"] for t in ts} | {d["type"] for r in rows for d in r.get("gold_spans", [])})
    f = st.columns(6)
    query = f[0].text_input("Search text", key="insp_query")
    want_types = f[1].multiselect("Entity types", types, key="insp_types")
    top = max(int(df["n_entities"].max()), 1)
    lo, hi = f[2].slider("Predicted entities", 0, top, (0, top), key="insp_nents")
    review = f[3].multiselect("Review state", insp.REVIEW_STATES, key="insp_review")
    sel_state = f[4].multiselect("Selection", ["selected", "filtered"], key="insp_selstate") if selected is not None else []
    sort_by = f[5].selectbox("Sort by", list(insp.SORT_KEYS), key="insp_sort",
                             format_func=lambda k: {"entities": "# predicted entities (NER-Selected)"}.get(k, k))
    descending = f[5].toggle("Descending", value=True, key="insp_desc")
    view = insp.filter_table(df, query, want_types, lo, hi, review, sel_state, sort_by, descending)
    counts = store.counts()
    done = counts["accepted"] + counts["rejected"] + counts["corrected"]
    st.progress(done / max(len(df), 1), text=f"{done} of {len(df)} sentences reviewed · {counts['accepted']} accepted · "
                                             f"{counts['rejected']} rejected · {counts['corrected']} corrected · {len(view)} shown")
    colors = type_colors(types)
    st.html(legend_html(colors))
    if conflict := st.session_state.get("insp_conflict"):
        st.warning(f"Conflict: {conflict[0]}")
        k = st.columns(4)
        k[0].button("Overwrite with my decision", key="insp_overwrite", on_click=decide, args=conflict[1])
        k[1].button("Keep the stored one", key="insp_keep", on_click=lambda: st.session_state.pop("insp_conflict", None))
    n_pages = max(1, -(-len(view) // PER_PAGE))
    cursor = min(max(st.session_state.get("insp_cursor", 0), 0), len(view) - 1) if len(view) else 0
    st.session_state["insp_cursor"] = cursor
    page = cursor // PER_PAGE
    nav = st.columns([1, 1, 6])
    nav[0].button("Previous", key="insp_prev", on_click=move_cursor, args=(-1,), shortcut="p")
    nav[1].button("Next", key="insp_next", on_click=move_cursor, args=(1,), shortcut="n")
    nav[2].caption(f"Page {page + 1} of {n_pages} · keys: **a** accept, **x** reject, **n** next, **p** previous (current ▶)")
    for pos in range(page * PER_PAGE, min(len(view), (page + 1) * PER_PAGE)):
        line = view.iloc[pos]
        row, i = rows[int(line["row"])], int(line["index"])
        item = items.get(i)
        reviewed = item is not None and item.status != "pending"
        spans = item.spans if reviewed and item.status != "rejected" else insp.row_spans(row)
        version = item.version if item else 0
        current = pos == cursor
        if current:
            st.session_state["insp_cursor_index"] = i
        with st.container(border=True, key=f"insp_item_{i}"):
            where = f" · {line['selection']}" if line["selection"] else ""
            st.markdown(f"{'▶ ' if current else ''}**#{i}** · {line['n_entities']} predicted · c1 {line['c1']:.3f} · "
                        f"c2 {line['c2']:.3f}{where} · state: **{item.status if reviewed else 'unreviewed'}**")
            gold = insp.row_spans(row, "gold_spans") if "gold_spans" in row else None
            st.html(prediction_html(row["tokens"], spans, colors, gold, label="review" if reviewed else "pred"))
            b = st.columns([1, 1, 1, 5])
            args = (req.review_key, i)
            b[0].button("Accept", key=f"accept_{i}", on_click=decide, shortcut="a" if current else None,
                        args=(*args, "accepted", version, row["tokens"], spans, req.model))
            b[1].button("Reject", key=f"reject_{i}", on_click=decide, shortcut="x" if current else None,
                        args=(*args, "rejected", version, row["tokens"], [], req.model))
            if b[2].button("Correct", key=f"correct_{i}"):
                st.session_state["insp_edit"] = (i, version)
            if st.session_state.get("insp_edit", (None,))[0] == i:
                correction_editor(req, row, spans, types, st.session_state["insp_edit"][1])
    export_panel(store)


def correction_editor(req: insp.PredictionRequest, row: dict, spans: list, types: list, version: int) -> None:
    i = row["index"]
    st.caption("Tokens: " + "  ".join(f"`{j}` {t}" for j, t in enumerate(row["tokens"])) + " — end is exclusive.")
    data = pd.DataFrame([s.to_dict() for s in spans], columns=["start", "end", "type"])
    edited = st.data_editor(data, num_rows="dynamic", key=f"edit_{i}", column_config={
        "start": st.column_config.NumberColumn(min_value=0, step=1), "end": st.column_config.NumberColumn(min_value=1, step=1),
        "type": st.column_config.SelectboxColumn(options=types)})
    if st.button("Save correction", key=f"save_{i}", type="primary"):
        new = run_guarded(lambda: insp.spans_from_rows(edited.to_dict("records"), len(row["tokens"])), "Correction")
        if new is not None:
            decide(req.review_key, i, "corrected", version, row["tokens"], new, req.model)
            st.rerun()


def export_panel(store: ReviewStore) -> None:
    counts = store.counts()
    if counts["accepted"] + counts["corrected"] == 0:
        return
    with st.expander(f"Export {counts['accepted'] + counts['corrected']} accepted / corrected sentences"):
        c = st.columns(4)
        fmt = c[0].selectbox("Format", ["conll", "jsonl"], key="insp_fmt")
        scheme = c[1].selectbox("Tag scheme", ["bio", "bioes"], key="insp_scheme")
        data = run_guarded(lambda: insp.export_bytes(store, fmt, scheme))
        if data:
            c[2].download_button("Download", data, file_name=f"reviewed.{fmt}", key="insp_download")
        name = c[3].text_input("Save as workspace corpus", value="reviewed", key="insp_save_name")
        if c[3].button("Save corpus", key="insp_save"):
            info = run_guarded(lambda: insp.save_reviewed_corpus(ws, store, name, None), "Could not save")
            if info:
                st.success(f"Saved {info.sentences} sentences as {info.name!r}: add it to LC on the Corpora page or train on it.")


def selftrain_tab() -> None:
    st.caption("Pseudo-label unlabeled sentences with a NER model trained on LC, keep those whose CRF confidence reaches a "
               "threshold chosen on DEV by the confidence error rate, add k = ratio x |LC| of them to LC, retrain from scratch.")
    c = st.columns(3)
    with c[0]:
        model = model_picker("NER model trained on LC", "st_model", insp.list_ner_models(ws))
        measure = st.radio("Confidence", aug.MEASURES, key="st_measure", horizontal=True,
                           captions=["sequence posterior", "min tag marginal"])
    with c[1]:
        lc = corpus_picker(ws, "LC", Role.LC, key="st_lc", labeled=True)
        dev = corpus_picker(ws, "DEV", Role.DEV, key="st_dev", labeled=True)
        test = corpus_picker(ws, "TEST", Role.TEST, key="st_test", labeled=True, allow_none=True)
    with c[2]:
        unlabeled, sel_key = source_picker("st", Role.DC)
        ratio = st.selectbox("k = ratio x |LC|", aug.RATIOS, index=1, key="st_ratio")
        preset = st.selectbox("Retraining preset", ["demo", "tiny", "paper"], key="st_preset")
    if not (model and lc and dev):
        st.info("Pick a NER model, LC and DEV.")
        return
    req = run_guarded(lambda: insp.prediction_request(ws, model, dev))
    threshold: float | str = "auto"
    if req is not None and predictions_ready(req, "st_dev_job", "DEV confidences"):
        curve = aug.cer_curve(*aug.cer_inputs_from_rows(load_rows(req.key, req), measure))
        best = aug.optimal_threshold(curve)
        threshold = st.slider("Threshold (the CER-optimal one, or lower for more pseudo-labels)", 0.0, 1.0, best, 0.01,
                              key=f"st_threshold_{measure}")
        st.plotly_chart(aug.cer_figure(curve, best, threshold, measure), key="st_cer_plot")
    if st.button("Start self-training", key="st_go", type="primary"):
        submit_job("selftrain", {"model": model, "lc": lc, "dev": dev, "test": test, "unlabeled": unlabeled, "selection": sel_key,
                                 "measure": measure, "threshold": threshold, "ratio": ratio, "preset": preset}, "st_job")
    job = latest_job("selftrain", "st_job")
    if job is not None:
        job_status(job, cancel_key="st")
        if job.status == "done" and job.result:
            r = job.result
            m = st.columns(4)
            m[0].metric("Threshold", f"{r['threshold']:.3f}", help=f"CER-optimal: {r['optimal_threshold']:.3f}")
            m[1].metric("Pseudo-labeled", r["pseudo_labeled"], help=f"{r['confident']} confident of {r['unlabeled']}")
            if "baseline_f1" in r:
                m[2].metric("TEST F1, LC model", f"{r['baseline_f1']:.4f}")
                m[3].metric("TEST F1, self-trained", f"{r['selftrain_f1']:.4f}", f"{r['selftrain_f1'] - r['baseline_f1']:+.4f}")
            st.caption(f"Self-trained model: {r['model_dir']}")


def augment_tab() -> None:
    st.caption("Replace masked words with a masked LM's predictions, keeping the labels. The default encoder has no trained "
               "MLM head: use an MLM run's model (MLM page) or a Hugging Face masked LM.")
    c = st.columns(3)
    with c[0]:
        lc = corpus_picker(ws, "LC", Role.LC, key="aug_lc", labeled=True)
        model = model_picker("Masked LM", "aug_model", insp.list_mlm_models(ws))
    with c[1]:
        sampling = st.selectbox("Sampling", aug.SAMPLINGS, key="aug_sampling")
        order = st.selectbox("Order", aug.ORDERS, key="aug_order")
        criterion = st.selectbox("Criterion (5 best predictions)", aug.CRITERIA, key="aug_criterion",
                                 format_func=lambda k: {"top": "top token", "joint": "probability x Levenshtein"}[k])
    with c[2]:
        min_prob = st.number_input("Min token probability", 0.0, 1.0, 0.0, 0.01, key="aug_min_prob")
        ner_model = model_picker("NER model for filtering", "aug_ner", insp.list_ner_models(ws), optional=True)
        min_conf = st.number_input("Min NER confidence (c1)", 0.0, 1.0, 0.0, 0.01, key="aug_min_conf", disabled=not ner_model)
    if st.button("Generate", key="aug_go", type="primary") and lc and model:
        submit_job("augment", {"lc": lc, "model": model, "sampling": sampling, "order": order, "criterion": criterion,
                               "min_token_prob": min_prob, "ner_model": ner_model, "min_confidence": min_conf if ner_model else 0.0},
                   "aug_job")
    job = latest_job("augment", "aug_job")
    if job is None:
        return
    job_status(job, cancel_key="aug")
    if job.status != "done" or not job.result or not job.result.get("generated"):
        return
    r = job.result
    st.caption(f"{r['generated']} generated from {r['input_sentences']} sentences · {r['masked_per_sentence']:.2f} masked per "
               f"sentence · dropped: {r['dropped_unchanged']} unchanged, {r['dropped_duplicates']} duplicates, "
               f"{r['dropped_low_confidence']} low confidence")
    generated, source = read_corpus(r["jsonl"]), ws.resolve_corpus(r["lc"])
    colors = type_colors({s.type for tags in generated.tags for s in spans_from_tags(tags)})
    for toks, tags, src in list(zip(generated.tokens, generated.tags, generated.fields["source_index"]))[:20]:
        st.html(augmented_html(source.tokens[src], toks, spans_from_tags(tags), colors))
    d = st.columns(3)
    d[0].download_button("Download CoNLL", corpus_bytes(generated, "conll"), "augmented.conll", key="aug_dl")
    name = d[1].text_input("Workspace corpus name", value=f"{source.name}-aug", key="aug_name")
    with_lc = d[1].checkbox("Include LC (a training corpus)", value=True, key="aug_with_lc")
    if d[2].button("Save as corpus", key="aug_save"):
        corpus = aug.combine_with_lc(source, generated, name) if with_lc else generated
        info = run_guarded(lambda: ws.save_corpus(corpus, name, source=f"augmentation job {job.id}"), "Could not save")
        if info:
            st.success(f"Saved {info.sentences} sentences as {info.name!r}: train on it from the Training page.")


review, selftrain, augmentation = st.tabs(["Review predictions", "Self-training", "MLM augmentation"])
with review:
    review_tab()
with selftrain:
    selftrain_tab()
with augmentation:
    augment_tab()
