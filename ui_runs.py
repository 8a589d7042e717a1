"""The Runs page's panels for one job (progress, actions, its result, curves) and the workspace's disk use; the page
(views/runs.py) holds the launch forms and the job list."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from core.data.showtext import markdown_literal
from core.data.workspace import CorpusRole, Workspace
from core.experiments.disk import disk_use, format_freed, free_snapshots, human_bytes
from core.experiments.readout import readout
from core.recipes import presets
from core.recipes.duration import format_clock
from core.runner import jobs, jobstore
from core.runner.jobview import describe_job, device_text, job_charts, status_text
from core.train.checkpoint_pick import mlm_snapshots
from ui import (
    actor,
    corpus_picker,
    run_guarded,
    show_error,
    show_readout,
    slow_down_polling,
    still_signed_in,
    submit_job,
)


def show_launched(job: jobstore.Job | None) -> None:
    """Point the detail panel at the job just started (its selectbox is drawn further down this run)."""
    if job is not None:
        st.session_state["runs_selected"] = job.id



def job_detail(ws: Workspace, job_id: str, interval: float | None) -> None:
    """One job: progress, cancel / resume / delete, its kind's result panel, the log tail."""
    still_signed_in()  # a fragment on a timer: no app.py between its reruns
    job = run_guarded(lambda: jobstore.get_job(ws, job_id))
    if job is None:
        return
    if interval is not None and not job.active:
        st.rerun(scope="app")  # finished while polling: redraw once without the timer, with its results
    slow_down_polling(job, interval)
    st.markdown(f"**{markdown_literal(describe_job(job))}** · `{job.id}`" + (f" · {where}" if (where := device_text(job)) else ""))
    said = status_text(job, jobs.list_jobs(ws))
    st.progress(job.progress, text=" · ".join([said, format_clock(job.elapsed)] + ([job.message] if job.message not in ("", said) else [])))
    if job.error:
        show_error(job.error)
    if job.status == "done" and job.outcome.warning:  # quality gates: near-0 F1, a weak masked LM
        st.warning(markdown_literal(job.outcome.warning))
    b = st.columns(6)
    # each action through the error box: the job may have ended, been resumed or deleted from elsewhere meanwhile
    if job.active and b[0].button("Cancel", key=f"cancel_{job.id}"):
        if run_guarded(lambda: jobs.cancel(ws, job.id, actor=actor()) or True, "Could not cancel"):
            st.rerun()
    if job.status in ("failed", "cancelled") and b[1].button("Resume", key=f"resume_{job.id}", help="continue from the last checkpoint"):
        if run_guarded(lambda: jobs.resume(ws, job.id, actor=actor()), "Could not resume"):
            st.rerun()
    if b[2].button("Delete", key=f"delete_{job.id}"):
        if run_guarded(lambda: jobs.delete(ws, job.id, actor=actor()) or True, "Could not delete"):
            st.session_state.pop("runs_job", None)
            st.rerun(scope="app")
    if job.result and job.kind in RESULT_PANELS:
        RESULT_PANELS[job.kind](ws, job)
    with st.expander("Log", expanded=job.status == "failed"):
        st.code(job.log_tail(60) or "(empty)")


def mlm_result(ws: Workspace, job: jobstore.Job) -> None:
    st.caption(("A fresh MLM head was initialised. " if job.outcome.fresh_head else "")
               + f"Model folder (usable as B1): `{job.outcome.out_dir}`")
    pick_panel(ws, job)


def experiment_result(ws: Workspace, job: jobstore.Job) -> None:
    show_readout(readout(job.result))


def pick_result(ws: Workspace, job: jobstore.Job) -> None:
    (st.success if job.result["helped"] else st.warning)(job.result["reason"])
    st.dataframe(pd.DataFrame(job.result["scores"]).rename(columns={"score": "DEV F1"}), hide_index=True,
                 key=f"pick_scores_{job.id}")


def pick_panel(ws: Workspace, job: jobstore.Job) -> None:
    """After an MLM run that kept snapshots: score them and the base encoder by DEV F1 (core.train.checkpoint_pick)."""
    snapshots = mlm_snapshots(job.run_dir, job.outcome.phases)
    if snapshots is None:
        st.caption("No snapshots kept: start MLM with 'Keep a snapshot every N steps' to pick the best checkpoint.")
        return
    c = st.columns([2, 2, 1])
    with c[0]:
        lc = corpus_picker(ws, "LC for the probe", CorpusRole.LC, f"pick_lc_{job.id}", labeled=True)
    with c[1]:
        dev = corpus_picker(ws, "DEV the probe scores", CorpusRole.DEV, f"pick_dev_{job.id}", labeled=True)
    if c[2].button("Pick the checkpoint", key=f"pick_go_{job.id}", help="one short NER fine-tune per snapshot and for "
                   "the base encoder; a snapshot is used only if it beats the base on DEV F1"):
        show_launched(submit_job("pick-checkpoint", {"snapshots": str(snapshots), "final": job.outcome.out_dir,
                                                     "base": job.spec.model or "default", "lc": lc, "dev": dev,
                                                     "preset": job.spec.preset or presets.DEFAULT_PRESET},
                                 "runs_job"))


def job_curves(ws: Workspace, job_id: str) -> None:
    """Loss, throughput and dev-F1 curves: a slower poll than the progress bar (see core.runner.jobview)."""
    still_signed_in()  # a fragment on a timer: no app.py between its reruns
    job = run_guarded(lambda: jobstore.get_job(ws, job_id))
    charts = job_charts(job) if job is not None else []
    cols = st.columns(2)
    for i, (name, fig) in enumerate(charts):
        (cols[i] if name != "dev" else st).plotly_chart(fig, key=f"{name}_{job_id}")


# ---------------------------------------------------------------- disk use (core.experiments.disk)
def disk_panel(ws: Workspace) -> None:
    """What the workspace holds on disk, measured on request (a study's folder walk takes seconds, too slow for every
    rerun), and the MLM snapshots that finished runs' checkpoint picks did not choose, freed on request."""
    if said := st.session_state.pop("disk_freed", None):
        st.success(said)
    if st.button("Measure disk use", key="disk_measure", help="walks the workspace's folders (seconds for a study)"):
        st.session_state["disk_report"] = run_guarded(lambda: {**disk_use(ws), "measured": time.strftime("%H:%M:%S")})
    report = st.session_state.get("disk_report")
    if not report or report["workspace"] != str(ws.root):  # measured in another workspace of the sidebar
        return
    st.caption(f"Measured at {report['measured']}: {human_bytes(report['total_bytes'])} in this workspace, "
               f"{human_bytes(report['disk_free_bytes'])} free on its disk.")
    st.dataframe([{"place": r["what"], "size": human_bytes(r["bytes"]), "unused MLM snapshots": human_bytes(r["unused_snapshot_bytes"]),
                   "freeable now": human_bytes(r["freeable_bytes"])} for r in report["rows"]], hide_index=True, key="disk_rows")
    for k in report["kept"]:
        st.caption(f"{human_bytes(k['bytes'])} of unused snapshots are kept: {k['why']}.")
    if report["freeable_bytes"] and st.button(f"Free {human_bytes(report['freeable_bytes'])} of unused MLM snapshots",
                                              key="disk_free", help="deletes the snapshots no checkpoint pick chose, in "
                                              "finished runs; the chosen ones, the models and results stay, and a new pick in "
                                              "such a run folder refuses (start a new run folder instead)"):
        freed = run_guarded(lambda: free_snapshots(ws, actor=actor()))
        if freed is not None:
            st.session_state["disk_freed"] = format_freed(freed).splitlines()[0]
            st.session_state.pop("disk_report", None)
            st.rerun()


# What a finished job of a kind shows under its log, by kind name (core.runner.kinds.KINDS); a kind not here shows
# its result JSON only. A page-side table: core stays free of Streamlit.
RESULT_PANELS = {"mlm": mlm_result, "experiment": experiment_result, "pick-checkpoint": pick_result}
