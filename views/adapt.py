"""Adapt: self-training with CRF confidence and MLM-based augmentation (Tokarchuk et al. 2021),
both as background jobs."""

from __future__ import annotations

import streamlit as st

from core.adapt import augment as aug
from core.adapt import selftrain as self_training
from core.data.corpus import corpus_bytes
from core.data.tags import spans_from_tags
from core.data.workspace import CorpusRole
from core.recipes.presets import preset_choices
from core.review import predictions
from core.review.highlight import CSS, augmented_html, type_colors
from core.runner.params import CONFIDENCE_MEASURES, CRITERIA, ORDERS, SAMPLINGS
from core.tables import count
from core.train import lineage
from ui import (
    actor,
    corpus_picker,
    get_workspace,
    job_status,
    latest_job,
    load_prediction_rows,
    model_picker,
    predictions_ready,
    run_guarded,
    source_picker,
    submit_job,
)

ws = get_workspace()
st.title("Adapt: self-training and augmentation")
st.html(CSS)


def selftrain_tab() -> None:
    st.caption("Pseudo-label unlabeled sentences with a NER model trained on LC, keep those whose CRF confidence reaches a "
               "threshold chosen on DEV by the confidence error rate, add k = ratio x |LC| of them to LC, retrain from scratch.")
    c = st.columns(3)
    with c[0]:
        model = model_picker("NER model trained on LC", "st_model", predictions.list_ner_models(ws))
        measure = st.radio("Confidence", CONFIDENCE_MEASURES, key="st_measure", horizontal=True,
                           captions=["sequence posterior", "min tag marginal"])
    with c[1]:
        lc = corpus_picker(ws, "LC", CorpusRole.LC, key="st_lc", labeled=True)
        dev = corpus_picker(ws, "DEV", CorpusRole.DEV, key="st_dev", labeled=True)
        test = corpus_picker(ws, "TEST", CorpusRole.TEST, key="st_test", labeled=True, allow_none=True)
    with c[2]:
        unlabeled, sel_key = source_picker(ws, "st", CorpusRole.DC)
        ratio = st.selectbox("k = ratio x |LC|", self_training.RATIOS, index=1, key="st_ratio")
        presets = preset_choices()  # core.recipes.presets: one list, the default first
        trained_with = run_guarded(lambda: lineage.model_preset(model, ws, actor())) if model else None
        preset = st.selectbox("Retraining preset", presets, key=f"st_preset_{trained_with}",
                              index=presets.index(trained_with) if trained_with in presets else 0,
                              help="The NER model's own preset by default, so the F1 comparison measures self-training alone.")
    if model and trained_with and preset != trained_with:
        st.warning(f"The NER model was trained with preset **{trained_with}**; retraining with **{preset}** mixes a "
                   "change of training recipe into the self-training gain. Pick the same preset to compare like with like.")
    elif model and not trained_with:
        st.caption("The NER model's training preset is unknown (a folder from outside the workspace runs): retrain with "
                   "the preset it was trained with, or the F1 comparison mixes two recipes.")
    if not (model and lc and dev):
        st.info("Pick a NER model, LC and DEV.")
        return
    req = run_guarded(lambda: predictions.prediction_request(ws, model, dev, actor=actor()))
    threshold: float | str = "auto"
    if req is not None and predictions_ready(req, "st_dev_job", "DEV confidences"):
        curve = self_training.cer_curve(*self_training.cer_inputs_from_rows(load_prediction_rows(req.key, req), measure))
        best = self_training.optimal_threshold(curve)
        threshold = st.slider("Threshold (the CER-optimal one, or lower for more pseudo-labels)", 0.0, 1.0, best, 0.01,
                              key=f"st_threshold_{measure}")
        st.plotly_chart(self_training.cer_figure(curve, best, threshold, measure), key="st_cer_plot")
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
                base_preset, new_preset = lineage.model_preset(job.params["model"]), job.spec.preset  # checked at submit
                m[2].metric(f"TEST F1, LC model ({base_preset or 'preset unknown'})", f"{r['baseline_f1']:.4f}")
                m[3].metric(f"TEST F1, self-trained ({new_preset})", f"{r['selftrain_f1']:.4f}",
                            f"{r['selftrain_f1'] - r['baseline_f1']:+.4f}")
                if base_preset != new_preset:
                    st.warning(f"Not a like-for-like comparison: the LC model was trained with preset "
                               f"**{base_preset or 'unknown'}**, the self-trained one with **{new_preset}**, so the F1 "
                               "difference mixes the recipe change with the effect of self-training. Run again with "
                               f"preset {base_preset or 'of the LC model'} to measure self-training alone.")
            st.caption(f"Self-trained model: {r['model_dir']}")


def augment_tab() -> None:
    st.caption("Replace masked words with a masked LM's predictions, keeping the labels. The default encoder has no trained "
               "MLM head: use an MLM run's model (Runs page, MLM pretraining) or a Hugging Face masked LM.")
    c = st.columns(3)
    with c[0]:
        lc = corpus_picker(ws, "LC", CorpusRole.LC, key="aug_lc", labeled=True)
        model = model_picker("Masked LM", "aug_model", predictions.list_mlm_models(ws))
    with c[1]:
        sampling = st.selectbox("Sampling", SAMPLINGS, key="aug_sampling")
        order = st.selectbox("Order", ORDERS, key="aug_order")
        criterion = st.selectbox("Criterion (5 best predictions)", CRITERIA, key="aug_criterion",
                                 format_func=lambda k: {"top": "top token", "joint": "probability x Levenshtein"}[k])
    with c[2]:
        min_prob = st.number_input("Min token probability", 0.0, 1.0, 0.0, 0.01, key="aug_min_prob")
        ner_model = model_picker("NER model for filtering", "aug_ner", predictions.list_ner_models(ws), optional=True)
        min_conf = st.number_input("Min NER confidence (c1)", 0.0, 1.0, 0.0, 0.01, key="aug_min_conf", disabled=not ner_model)
    g = st.columns(2)
    with g[0]:
        check_tc = corpus_picker(ws, "Held-out text for the MLM's accuracy", CorpusRole.TC, key="aug_check_tc", allow_none=True,
                                 help="The quality gate masks words of this text and measures the MLM's top-1 accuracy "
                                      "(none: skip it).")
    allow_degenerate = g[1].checkbox(
        "Write the output even if the masked LM looks degenerate", key="aug_allow_degenerate",
        help="The quality gate refuses output whose replacements are mostly the same few words (a fresh or barely "
             "trained MLM head puts 'the' everywhere). Tick to keep such output anyway, e.g. to show what it looks like.")
    if st.button("Generate", key="aug_go", type="primary") and lc and model:
        submit_job("augment", {"lc": lc, "model": model, "sampling": sampling, "order": order, "criterion": criterion,
                               "min_token_prob": min_prob, "ner_model": ner_model, "min_confidence": min_conf if ner_model else 0.0,
                               "check_tc": check_tc, "allow_degenerate": allow_degenerate},
                   "aug_job")
    job = latest_job("augment", "aug_job")
    if job is None:
        return
    job_status(job, cancel_key="aug")
    if job.status != "done" or not job.outcome.generated:
        return
    r = job.result
    st.caption(f"{r['generated']} generated from {count(r['input_sentences'], 'sentence')} · {r['masked_per_sentence']:.2f} masked per "
               f"sentence · dropped: {r['dropped_unchanged']} unchanged, {r['dropped_duplicates']} duplicates, "
               f"{r['dropped_low_confidence']} low confidence")
    pair = run_guarded(lambda: aug.augmented_pair(ws, r), "Cannot show this augmentation")
    if pair is None:
        return
    source, generated = pair
    colors = type_colors({s.type for tags in generated.tags for s in spans_from_tags(tags)})
    for toks, tags, src in list(zip(generated.tokens, generated.tags, generated.fields["source_index"]))[:20]:
        st.html(augmented_html(source.tokens[src], toks, spans_from_tags(tags), colors))
    d = st.columns(3)
    d[0].download_button("Download CoNLL", corpus_bytes(generated, "conll"), "augmented.conll", key="aug_dl")
    name = d[1].text_input("Workspace corpus name", value=f"{source.name}-aug", key="aug_name")
    with_lc = d[1].checkbox("Include LC (a training corpus)", value=True, key="aug_with_lc")
    if d[2].button("Save as corpus", key="aug_save"):
        corpus = aug.combine_with_lc(source, generated, name) if with_lc else generated
        info = run_guarded(lambda: ws.save_corpus(corpus, name, source=f"augmentation job {job.id}", actor=actor()),
                           "Could not save")
        if info:
            st.success(f"Saved {count(info.sentences, 'sentence')} as {info.name!r}: train on it from the Runs page.")


selftrain, augmentation = st.tabs(["Self-training", "MLM augmentation"])
with selftrain:
    selftrain_tab()
with augmentation:
    augment_tab()
