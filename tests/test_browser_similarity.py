"""Browser test of the Similarity page's "Measures against downstream F1" panel (Dai et al. 2020 Fig. 2):
finished NER runs in the run index -> a scatter per measure with its Pearson r.

The workspace is prepared with the functions the app itself uses: a real similarity job (run by the
job runner), and finished NER runs written to the run index by core.train.lineage.record_run with lineages
that name real corpora and their content hashes, as compare-sources and experiment cells record them.
"""

from __future__ import annotations

import pytest

from tests.browser import browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser

MEASURES = ["tvc", "jsd"]
# (pretraining source role, test F1); None = no pretraining, the baseline the gain is measured against
RUNS = [(None, 0.50), (None, 0.52), ("dc", 0.61), ("lc", 0.57), ("dev", 0.55)]


@pytest.fixture(scope="module")
def f1_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace
    from core.runner import jobs
    from core.train.lineage import Lineage, MlmPhase, corpus_hash, corpus_stamp, record_run

    root = tmp_path_factory.mktemp("simf1ws")
    ws = write_demo_workspace(root, dc_size=600)
    roles = {r.value: n for r, n in ws.roles().items()}
    job = jobs.submit(ws, "similarity", {"sources": [roles["dc"], roles["lc"], roles["dev"]], "targets": [roles["tc"]],
                                         "measures": MEASURES})
    job = jobs.wait(ws, job.id)
    assert job.status == "done", job.error
    for i, (role, f1) in enumerate(RUNS):
        phases = [MlmPhase(roles[role], [corpus_hash(ws, roles[role])], sentences=100)] if role else []
        lineage = Lineage(base_model="default", mlm_phases=phases, lc=corpus_stamp(ws, roles["lc"]), dev=corpus_stamp(ws, roles["dev"]),
                          test=corpus_stamp(ws, roles["test"]), seed=i + 1, preset="tiny", wall_seconds=1.0)
        record_run(ws, f"ner-{role or 'none'}-{i}", "ner", lineage, f1=f1)
    return root


def _scatters(page) -> list[dict]:
    """Title, drawn markers and their labels of every plotly figure on the page whose title carries an r."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({
        title: (gd.layout && gd.layout.title && gd.layout.title.text) || '',
        points: gd.querySelectorAll('.scatterlayer .point').length,
        sources: Array.from(gd.querySelectorAll('.scatterlayer .textpoint text')).map(t => t.textContent),
    })).filter(f => f.title.includes('Pearson r'))""")


def test_similarity_f1_panel_draws_scatter_with_r(f1_ws):
    from core.data.workspace import Workspace
    from core.runner import jobs
    from core.similarity.correlation import correlate_with_f1, finished_f1_runs
    from core.similarity.matrix_result import SimilarityMatrix

    ws = Workspace(f1_ws)
    result = SimilarityMatrix.from_dict(jobs.list_jobs(ws, "similarity")[0].result)
    target = result.targets[0]
    expected = correlate_with_f1(finished_f1_runs(ws), result, target)["measures"]
    assert all(expected[m]["r"] is not None and expected[m]["n"] == 3 for m in MEASURES)
    with streamlit_server(f1_ws) as url, browser_page(height=2600) as page:
        page.goto(f"{url}/similarity")
        wait_for_app(page, "Measures against downstream F1")
        page.get_by_text("over the no-pretraining baseline F1").first.wait_for()
        page.wait_for_function("""(n) => Array.from(document.querySelectorAll('.js-plotly-plot'))
            .filter(gd => gd.layout && gd.layout.title && String(gd.layout.title.text).includes('Pearson r')).length >= n""",
                               arg=len(MEASURES))
        scatters = _scatters(page)
        assert len(scatters) == len(MEASURES), scatters
        roles = {r.value: n for r, n in ws.roles().items()}
        for measure, fig in zip(MEASURES, scatters, strict=True):
            r = expected[measure]["r"]
            assert f"Pearson r = {r:.3f}" in fig["title"] and "n = 3" in fig["title"], (measure, fig["title"])
            assert fig["points"] == 3 and sorted(fig["sources"]) == sorted(roles[k] for k in ("dc", "lc", "dev"))
        screenshot(page, "similarity_f1_panel")
