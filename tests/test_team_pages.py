"""Issue 23 pages under AppTest: signed out only the sign-in form; each role gets its own page list; the annotator's
queue saves through core with the signed-in name; the agreement and task pages render a task."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.access import Actor, Role
from core.data.tags import Span
from core.data.workspace import Workspace
from core.team import tasks, users
from tests.apptest import ROOT, shown

PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def team_root(tmp_path_factory):
    from core.data.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("teampages")
    ws = write_demo_workspace(root, dc_size=200)
    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator"), ("bob", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    task = tasks.create_task(ws, Actor("rita", Role.RESEARCHER), "sample", ["ann", "bob"], corpus="demo-dc", n_items=4,
                             overlap=1.0, types=["PER", "LOC"], guidelines="Mark people.")
    for who, span in (("ann", Span(0, 1, "PER")), ("bob", Span(0, 1, "LOC"))):
        actor = Actor(who, Role.ANNOTATOR)
        for item in tasks.queue(ws, actor, task.id)[:2]:
            tasks.save_annotation(ws, actor, task.id, item.index, [span])
    return root


def app_as(root, monkeypatch, name: str | None) -> AppTest:
    monkeypatch.setenv("NERSELECT_WORKSPACE", str(root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if name:
        ws = Workspace(root)
        at.session_state["team_session_token"] = users.open_session(ws, users.get_user(ws, name).actor())
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_signed_out_shows_the_sign_in_form_and_no_workspace_data(team_root, monkeypatch):
    at = app_as(team_root, monkeypatch, None)
    assert [t.value for t in at.title] == ["Sign in"]
    assert not at.sidebar.text_input and not at.dataframe and not at.sidebar.markdown
    at.text_input(key="signin_name").set_value("ann")
    at.text_input(key="signin_password").set_value("wrong password")
    at.button[0].click().run()
    assert any("wrong user name or password" in shown(e) for e in at.error)
    at.text_input(key="signin_name").set_value("ann")
    at.text_input(key="signin_password").set_value(PASSWORD)
    at.button[0].click().run()
    assert [t.value for t in at.title] == ["My review queue"]


def test_an_annotator_gets_only_the_queue_and_saves_as_themselves(team_root, monkeypatch):
    at = app_as(team_root, monkeypatch, "ann")
    assert [t.value for t in at.title] == ["My review queue"]
    assert not any(t.label == "Folder" for t in at.sidebar.text_input)
    assert any("Signed in as **ann**" in m.value for m in at.sidebar.markdown)
    assert any("2 of 4 sentences answered" in str(p.proto.text) for p in at.get("progress"))
    at.button(key="q_save").click().run()  # the third sentence, no spans: "no entity"
    assert not at.exception
    ws = Workspace(team_root)
    task = tasks.list_tasks(ws, Actor("ann", Role.ANNOTATOR))[0]
    assert sum(1 for i in tasks.queue(ws, Actor("ann", Role.ANNOTATOR), task.id) if i.status == "done") == 3
    with pytest.raises(ValueError):  # a researcher page is not registered for an annotator
        at.switch_page("views/runs.py")


@pytest.mark.parametrize(("who", "page", "text"), [("rita", "views/tasks.py", "Review tasks"),
                                                    ("rita", "views/agreement.py", "Agreement"),
                                                    ("boss", "views/users.py", "Users"),
                                                    ("rita", "views/queue.py", "My review queue")])
def test_staff_pages_render(team_root, monkeypatch, who, page, text):
    at = app_as(team_root, monkeypatch, who)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == [text]


def test_a_researcher_has_no_users_page_and_sees_agreement_numbers(team_root, monkeypatch):
    at = app_as(team_root, monkeypatch, "rita")
    with pytest.raises(ValueError):
        at.switch_page("views/users.py")
    at.switch_page("views/agreement.py").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sentences reviewed twice"] == "2" and metrics["Entity F1, exact"] == "0.000"
    assert metrics["Entity F1, partial"] == "1.000"


def test_save_right_after_assign_keeps_the_new_span(team_root, monkeypatch):
    """The bench of issue 47 found it: "Save and next" clicked before the rerun after "Assign type" had finished
    stored the sentence without its span (the callback saved the draft the page was drawn with). Both clicks here
    reach the server in one run, as they do from a quick annotator."""
    at = app_as(team_root, monkeypatch, "bob")
    ws, bob = Workspace(team_root), Actor("bob", Role.ANNOTATOR)
    task = tasks.list_tasks(ws, bob)[0]
    item = next(i for i in tasks.queue(ws, bob, task.id) if not i.status)
    at.session_state["q_type"] = "PER"
    grid = next(w for w in at.get("button_group") if w.key and w.key.startswith("q_tokens_"))
    grid.set_value([0])
    at.button(key="q_assign").click()
    at.button(key="q_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    saved = next(i for i in tasks.queue(ws, bob, task.id) if i.index == item.index)
    assert saved.status == "done" and saved.spans == [Span(0, 1, "PER")]


def test_the_cookie_handoff_never_moves_the_page(team_root, monkeypatch):
    """The handoff script is drawn only until the browser redeems it. Drawn above the page, its going shifted every
    element and Streamlit redrew them afresh, closing an open expander (the Agreement span editor) under the user's
    first click after signing in: it lives in a sidebar slot drawn on every run."""
    from core.team import websession

    at = app_as(team_root, monkeypatch, None)
    at.text_input(key="signin_name").set_value("rita")
    at.text_input(key="signin_password").set_value(PASSWORD)
    at.button[0].click().run()
    assert [t.value for t in at.title] == ["Corpora"]

    def scripts(block) -> list[str]:
        return [h.proto.body for h in block.get("html") if "<script" in h.proto.body]

    assert not scripts(at.main)
    pending = scripts(at.sidebar)
    assert len(pending) == 1 and "handoff" in pending[0]
    main, side = len(at.main.children), len(at.sidebar.children)
    code = pending[0].split('handoff: "')[1].split('"')[0]
    assert websession.redeem(code) is not None  # what the browser's fetch does
    at.run()
    assert not scripts(at.sidebar) and not at.exception
    assert (len(at.main.children), len(at.sidebar.children)) == (main, side)


def test_save_merged_with_next_stores_the_sentence_shown_and_ends_on_the_next_unanswered(team_root, monkeypatch):
    """A Save and a Next merged into one run: the sentence shown is stored and the queue goes to the next one still to
    answer (Save's jump), not one step on to a sentence already answered."""
    at = app_as(team_root, monkeypatch, "ann")
    ws, ann = Workspace(team_root), Actor("ann", Role.ANNOTATOR)
    task = tasks.list_tasks(ws, ann)[0]
    items = tasks.queue(ws, ann, task.id)
    assert items[0].status and items[1].status  # the fixture answered her first two (an earlier test maybe a third)
    todo = next(p for p, i in enumerate(items) if not i.status)  # where the page opens, and where Save jumps from 0
    for _ in range(todo):
        at.button(key="q_prev").click().run()
    assert any("Sentence 1 of" in m.value for m in at.markdown)
    at.button(key="q_save").click()
    at.button(key="q_next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"Sentence {todo + 1} of" in m.value for m in at.markdown), [m.value for m in at.markdown][:3]
    assert tasks.queue(ws, ann, task.id)[0].version == items[0].version + 1  # the first sentence was stored again


def test_the_agreement_editor_keeps_each_tasks_decision_apart(tmp_path, monkeypatch):
    """Two tasks over one corpus share sentence indices: the editor's draft was keyed by the index alone, so task B's
    draft stayed in the editor when the researcher switched to task A, and Save stored it over A's decision. A decision
    of no entity ([]) opened as the first annotator's spans, so a save after any edit undid it."""
    from core.data.corpus import Corpus
    from core.team import adjudicate

    ws = Workspace(tmp_path / "ws")
    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator"), ("bob", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    ws.save_corpus(Corpus(tokens=[["Ada", "met", "Bob", "in", "Rome"]]), "c")
    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    a = tasks.create_task(ws, rita, "A", ["ann", "bob"], corpus="c", overlap=1.0, types=["PER", "LOC"])
    tasks.save_annotation(ws, ann, a.id, 0, [Span(0, 1, "PER")])
    tasks.save_annotation(ws, bob, a.id, 0, [])
    adjudicate.adjudicate(ws, rita, a.id, 0, [], "bob", expected_version=0)  # "no entity" is A's final answer
    b = tasks.create_task(ws, rita, "B", ["ann", "bob"], corpus="c", overlap=1.0, types=["PER", "LOC"])
    tasks.save_annotation(ws, ann, b.id, 0, [Span(4, 5, "LOC")])
    tasks.save_annotation(ws, bob, b.id, 0, [Span(2, 3, "PER"), Span(4, 5, "LOC")])

    def final(task) -> list | None:
        return adjudicate.items(ws, rita, task.id)[0].adjudicated

    def draft(at: AppTest, task) -> list:
        return at.session_state[f"agr_draft_0_{task.id}_{adjudicate.items(ws, rita, task.id)[0].version}"]

    at = app_as(tmp_path / "ws", monkeypatch, "rita")
    at.switch_page("views/agreement.py").run()
    at.selectbox(key="agr_task").set_value(a).run()
    assert draft(at, a) == []  # the decision as it stands, not ann's PER
    at.selectbox(key="agr_task").set_value(b).run()
    assert draft(at, b) == [Span(4, 5, "LOC")]  # B's first answer, not A's draft
    save = next(w for w in at.button if w.key and w.key.startswith("agr_save_0_"))
    save.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert final(b) == [Span(4, 5, "LOC")] and final(a) == []
    at.selectbox(key="agr_task").set_value(a).run()
    save = next(w for w in at.button if w.key and w.key.startswith("agr_save_0_"))
    save.click().run()
    assert final(a) == [] and final(b) == [Span(4, 5, "LOC")]


def test_a_refused_user_change_shows_why_and_an_accepted_one_takes(tmp_path, monkeypatch):
    """The Users page reran after every change, so core's refusal (the last enabled admin cannot become an annotator)
    was drawn and wiped at once: the click seemed to do nothing."""
    ws = Workspace(tmp_path / "ws")
    for name, role in (("boss", "admin"), ("ann", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    at = app_as(tmp_path / "ws", monkeypatch, "boss")
    at.switch_page("views/users.py").run()
    at.selectbox(key="users_pick").set_value("boss")
    at.selectbox(key="users_role").set_value("annotator")
    at.button(key="users_set_role").click().run()
    assert any("Could not set role" in shown(e) and "admin" in shown(e) for e in at.error), [shown(e) for e in at.error]
    assert users.get_user(ws, "boss").role == Role.ADMIN
    at.selectbox(key="users_pick").set_value("ann")
    at.selectbox(key="users_role").set_value("researcher")
    at.button(key="users_set_role").click().run()
    assert not at.error and users.get_user(ws, "ann").role == Role.RESEARCHER
    at.text_input(key="users_new_password").input("short")  # an admin resets a password here, as the CLI does
    at.button(key="FormSubmitter:users_password-Set password").click().run()
    assert any("Could not set the password" in shown(e) for e in at.error)
    at.text_input(key="users_new_password").input("a new long password 7")
    at.button(key="FormSubmitter:users_password-Set password").click().run()
    assert any("Password of ann changed" in s.value for s in at.success)
    assert users.authenticate(ws, "ann", "a new long password 7").name == "ann"


def test_tokens_and_types_show_as_themselves_in_the_pickers(tmp_path, monkeypatch):
    """Streamlit renders Markdown in pills options and button labels: a DC token `![x](https://...)` made every
    annotator's browser fetch a remote image, and `**now**` showed bold as 'now', in the token picker of the queue and
    the Agreement editor, and so did a task's entity type on its buttons and pills."""
    from core.data.corpus import Corpus
    from core.data.showtext import markdown_literal

    ws = Workspace(tmp_path / "ws")
    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator"), ("bob", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    tokens = ["Visit", "![x](https://evil.example/t.png)", "[here](https://evil.example)", "**now**"]
    ws.save_corpus(Corpus(tokens=[tokens]), "c")
    rita, ann = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR)
    task = tasks.create_task(ws, rita, "md", ["ann", "bob"], corpus="c", overlap=1.0, types=["PER", "**B**"])
    at = app_as(tmp_path / "ws", monkeypatch, "ann")
    grid = next(w for w in at.get("button_group") if w.key and w.key.startswith("q_tokens_"))
    assert grid.options == [markdown_literal(t) for t in tokens] and "![x](" not in "".join(grid.options)
    assert {b.label for b in at.button if b.key and b.key.startswith("q_type_b")} == {"PER", r"\*\*B\*\*"}
    tasks.save_annotation(ws, ann, task.id, 0, [Span(0, 1, "**B**")])
    tasks.save_annotation(ws, Actor("bob", Role.ANNOTATOR), task.id, 0, [])  # they differ: the editor opens
    at = app_as(tmp_path / "ws", monkeypatch, "rita")
    at.switch_page("views/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    groups = {w.key.split("_")[1]: w.options for w in at.get("button_group") if w.key and w.key.startswith("agr_")}
    assert groups["tok"] == [markdown_literal(t) for t in tokens] and set(groups["type"]) == {"PER", r"\*\*B\*\*"}
