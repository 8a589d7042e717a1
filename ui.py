"""Shared Streamlit helpers for pages: workspace access, pickers, job panels, errors.

Pages stay thin: they gather input with these widgets, call one core function (or
submit one job) and render the result. Nothing here computes anything a test would
want; that lives in core/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.access import LOCAL, Actor
from core.data import selection_store
from core.data.selection import SelectionMeta
from core.data.showtext import markdown_literal
from core.data.workspace import CorpusRole, Workspace
from core.errors import UserError
from core.review import predictions
from core.runner import jobs, jobstore
from core.runner.jobview import describe_job, poll_seconds, status_text
from core.tables import count

if TYPE_CHECKING:
    from core.experiments.readout import Said

WS_KEY = "workspace_root"
ACTOR_KEY = "signed_in_actor"  # set by app.py on every run from the sign-in (never from a typed name)


def actor() -> Actor:
    """Who acts in this browser session: the signed-in user, or LOCAL in the single-user app on loopback."""
    return st.session_state.get(ACTOR_KEY, LOCAL)


def still_signed_in() -> None:
    """At the top of a fragment that reruns on a timer: a fragment's rerun runs no app.py, so a user disabled, demoted or
    signed out meanwhile kept receiving job names, progress and logs there. Such a session reruns the whole app (the
    sign-in form, or the pages of the new role)."""
    who = actor()
    if who == LOCAL:
        return
    try:
        now = who.current()
    except UserError:
        now = None
    if now is None or now.role != who.role:
        st.rerun(scope="app")


def get_workspace() -> Workspace:
    """The workspace picked in the sidebar (app.py sets it before any page runs)."""
    return Workspace(st.session_state.get(WS_KEY))


CURRENT_SELECTION = "current_selection"  # the saved selection this session works with, shared by Selection and Map


def selection_picker(label: str, metas: list[SelectionMeta], key: str, col: Any = None) -> str:
    """A selectbox over saved selections (`metas` newest first, as core.data.selection_store lists them) that opens on
    the selection this session worked with last (picked on Selection or Map, or just computed here), else the
    newest; picking one makes it the current one for the other page too."""
    keys = [m.key for m in metas]
    labels = {m.key: m.label for m in metas}
    current = st.session_state.get(CURRENT_SELECTION)
    st.session_state[key] = current if current in keys else keys[0]
    st.session_state[CURRENT_SELECTION] = st.session_state[key]

    def _pick() -> None:
        st.session_state[CURRENT_SELECTION] = st.session_state[key]

    return (col or st).selectbox(label, keys, format_func=labels.get, key=key, on_change=_pick)


def corpus_names(ws: Workspace, labeled: bool | None = None) -> list[str]:
    return [i.name for i in ws.list_corpora() if labeled is None or i.labeled == labeled]


def corpus_picker(ws: Workspace, label: str, role: CorpusRole | None, key: str, labeled: bool | None = None,
                  allow_none: bool = False, help: str | None = None) -> str | None:
    """A selectbox over workspace corpora, preselecting the corpus holding `role`."""
    names = corpus_names(ws, labeled)
    options = ([None] if allow_none else []) + names
    if not names:
        st.info(f"No {'labeled ' if labeled else ''}corpora in the workspace yet: load one on the Corpora page.")
        return None
    default = ws.corpus_for_role(role) if role else None
    index = options.index(default) if default in options else 0
    return st.selectbox(label, options, index=index, key=key, help=help,
                        format_func=lambda n: "(none)" if n is None else _corpus_label(ws, n))


def _corpus_label(ws: Workspace, name: str) -> str:
    info = ws.corpus_info(name)
    role = f" [{info.role.upper()}]" if info.role else ""
    return f"{name}{role} · {count(info.sentences, 'sentence')}"


def show_error(text: str) -> None:
    """An error box whose text is shown as itself: messages quote file lines, names and job errors, so a line holding
    `![x](https://host/t.png)` or `:red[...]` must not load an image or restyle the page (core.data.showtext)."""
    st.error(markdown_literal(text))


def show_readout(said: Iterable[Said]) -> None:
    """An experiment's readout (core.experiments.readout), each line in its tone, as the Results and Runs pages say it."""
    for line in said:
        getattr(st, line.tone)((f"**{line.strong}**: " if line.strong else "") + line.text)


def run_guarded(fn: Callable[[], Any], what: str = "", before_error: Callable[[], Any] | None = None) -> Any:
    """Call `fn`; show a user mistake as an error box instead of a traceback (`before_error`: clear what the
    attempt drew, e.g. its progress bar)."""
    try:
        return fn()
    except (UserError, OSError) as exc:  # OSError: a path the system refused (no space, no permission), said as one line
        if before_error is not None:
            before_error()
        said = str(exc) if isinstance(exc, UserError) else f"{exc.filename or ''}{': ' if exc.filename else ''}{exc.strerror or exc}"
        show_error(f"{what + ': ' if what else ''}{said}")
        return None


def submit_job(kind: str, params: dict[str, Any], state_key: str) -> jobstore.Job | None:
    """Submit a background job and remember its id in session state under `state_key`."""
    ws = get_workspace()
    job = run_guarded(lambda: jobs.submit(ws, kind, params, actor=actor()), f"could not start {kind}")
    if job is not None:
        st.session_state[state_key] = job.id
    return job


def latest_job(kind: str, state_key: str | None = None) -> jobstore.Job | None:
    """The job this session started, else the newest job of that kind (so a reopened tab
    finds running work again)."""
    ws = get_workspace()
    job_id = st.session_state.get(state_key) if state_key else None
    if job_id:
        try:
            return jobstore.get_job(ws, job_id)
        except UserError:
            pass
    found = jobs.list_jobs(ws, kind)
    return found[0] if found else None


def job_poll(job: jobstore.Job) -> float | None:
    """The run_every of a fragment that follows `job` (core.runner.jobview.poll_seconds; None once it ended)."""
    return poll_seconds(job.elapsed) if job.active else None


def slow_down_polling(job: jobstore.Job, interval: float | None) -> None:
    """Re-register the page's timers when the job has aged into a slower poll: a fragment's
    run_every is fixed until the whole page reruns, so that is what this asks for (twice per job)."""
    if interval is not None and job.active and job_poll(job) != interval:
        st.rerun(scope="app")


def job_status(job: jobstore.Job, on_done: Callable[[jobstore.Job], None] | None = None, cancel_key: str = "") -> None:
    """Progress bar + message for one job; polls itself while active (every 2-10 s, see job_poll)."""
    interval = job_poll(job)

    @st.fragment(run_every=interval)
    def _panel() -> None:
        still_signed_in()
        ws = get_workspace()
        try:
            current = jobstore.get_job(ws, job.id)
        except UserError:  # deleted from another tab or the CLI while this one polled it
            st.info(f"Job {job.id} is gone: it was deleted.")
            return
        slow_down_polling(current, interval)
        label = f"{describe_job(current, 80)} · {current.status}"
        if current.elapsed is not None:
            label += f" · {current.elapsed:.0f}s"
        if current.status == "queued":
            st.progress(0.0, text=f"{describe_job(current, 80)} · {status_text(current, jobs.list_jobs(ws))}")
        if current.status == "running":
            st.progress(current.progress, text=f"{label} — {current.message or 'starting...'}")
            if tail := _log_tail(current):
                st.caption(tail)  # whatever the step logs (epochs, batches) shows here as it happens
        if current.active:
            if st.button("Cancel", key=f"cancel-{cancel_key or current.id}"):
                if run_guarded(lambda: jobs.cancel(get_workspace(), current.id, actor=actor()) or True, "Could not cancel"):
                    st.rerun()
        elif current.status == "done":
            said = current.outcome.said()
            st.success(f"{label} — finished" + (f": {said}" if said else ""))
            if current.outcome.warning:  # quality gates: near-0 F1, a weak masked LM, an absurd sentence length
                st.warning(markdown_literal(current.outcome.warning))
            if job.active:  # it finished while we were polling: redraw the whole page once
                st.rerun()
            if on_done is not None:
                on_done(current)
        else:
            if current.status == "cancelled":
                st.info(f"{label}: {current.message or 'cancelled'}")
            else:
                show_error(f"{label}: {current.error or current.message}")
            # on every page, not only Runs: training jobs continue from their last checkpoint, the others start over
            if st.button("Resume", key=f"resume-{cancel_key or current.id}", help="continue from the last checkpoint"):
                if run_guarded(lambda: jobs.resume(get_workspace(), current.id, actor=actor()), "Could not resume"):
                    st.rerun()
            with st.expander("Log"):
                st.code(current.log_tail(60) or "(empty)")

    _panel()


def _log_tail(job: jobstore.Job, lines: int = 2) -> str:
    """The last lines a running job logged, when they add to its progress message."""
    text = [ln.strip() for ln in job.log_tail(lines).splitlines() if ln.strip() and ln.strip() not in (job.message or "")]
    return " · ".join(t[:160] for t in text[-lines:])



# --------------------------------------------------------------------------- choices that survive a reload


def restore_from_url(allowed: dict[str, Any]) -> None:
    """Before the widgets: take each key's value from the page URL when this session has none yet (a reload starts a
    new session, which used to forget the source and the annotator), if it is still a valid choice (`allowed[key]`:
    the options, or None for free text)."""
    for key, options in allowed.items():
        value = st.query_params.get(key)
        if key not in st.session_state and value and (options is None or value in options):
            st.session_state[key] = value


def keep_in_url(*keys: str) -> None:
    """After the widgets: mirror their values into the URL (a reload, a bookmark or a shared link reopens them)."""
    for key in keys:
        value = st.session_state.get(key)
        if isinstance(value, str) and value:
            st.query_params[key] = value
        elif key in st.query_params:
            del st.query_params[key]


# --------------------------------------------------------------------------- NER models and predictions (Inspect, Adapt)

OTHER = "(another folder)"


def model_picker(label: str, key: str, models: list, optional: bool = False) -> str | None:
    """Model folders by the job that made them (paths all end in '.../model' and looked alike), unique labels."""
    from core.runner.jobview import model_labels

    ws = get_workspace()
    options = ([None] if optional else []) + [str(p) for p in models] + [OTHER]
    labels = model_labels([str(p) for p in models], jobs.list_jobs(ws))
    choice = st.selectbox(label, options, key=key, format_func=lambda p: "(none)" if p is None else labels.get(p, p),
                          help="Named by the job that trained it; the folder is in brackets.")
    return st.text_input("Model folder or Hugging Face id", key=f"{key}_path") if choice == OTHER else choice


def source_picker(ws: Workspace, prefix: str, role: CorpusRole) -> tuple[str | None, str | None]:
    """(corpus, selection key): sentences of a workspace corpus or of a saved selection."""
    sels = {m.key: m.label for m in selection_store.list_selections(ws, in_workspace=True)}
    if sels and st.radio("Sentences from", ["corpus", "saved selection"], key=f"{prefix}_source", horizontal=True) != "corpus":
        return None, st.selectbox("Selection", list(sels), key=f"{prefix}_sel", format_func=sels.get)
    return corpus_picker(ws, "Corpus", role, key=f"{prefix}_corpus"), None


def predictions_ready(req: predictions.PredictionRequest, state_key: str, what: str) -> bool:
    """True when cached; otherwise offer (or follow) the prediction job."""
    ws = get_workspace()
    if req.done:
        return True
    job = latest_job("predict", state_key)
    if job is not None and job.spec.out == str(req.predictions_path):
        job_status(job, cancel_key=state_key)
        if job.active:
            return False
    if st.button(f"Predict {what}", key=f"{state_key}_go", type="primary"):
        params = run_guarded(lambda: predictions.predict_job_params(ws, req))
        if params and submit_job("predict", params, state_key):
            st.rerun()
    return False


@st.cache_data(max_entries=8, show_spinner=False)
def load_prediction_rows(key: str, _req: predictions.PredictionRequest) -> list[dict]:
    del key  # the cache key: content hash of model, corpus and selection
    return predictions.load_predictions(_req)
