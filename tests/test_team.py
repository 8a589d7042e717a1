"""Issue 23 in core: accounts, sign-in locks, sessions, roles checked where state changes, review tasks, agreement
against a hand computation, adjudication and the way back to a corpus."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.access import LOCAL, AccessDenied, Actor, Role
from core.cli import main
from core.data.annotation_db import connect
from core.data.tags import Span
from core.errors import UserError
from core.team import adjudicate, tasks, users
from core.team.agreement import agreement, agreement_files
from core.team.db import read_audit

PASSWORD = "correct horse"


@pytest.fixture
def team_ws(tmp_path):
    from core.data.demo import write_demo_workspace

    ws = write_demo_workspace(tmp_path / "ws", dc_size=200)
    users.add_user(ws, "boss", "admin", PASSWORD)
    users.add_user(ws, "rita", "researcher", PASSWORD)
    users.add_user(ws, "ann", "annotator", PASSWORD)
    users.add_user(ws, "bob", "annotator", PASSWORD)
    return ws


# --------------------------------------------------------------------------- accounts and sign-in


def test_passwords_are_argon2_hashes_and_sign_in_checks_them(team_ws):
    con = connect(team_ws)
    stored = con.execute("SELECT pw_hash FROM users WHERE name = 'ann'").fetchone()[0]
    con.close()
    assert stored.startswith("$argon2") and PASSWORD not in stored
    assert users.authenticate(team_ws, "ann", PASSWORD) == Actor("ann", Role.ANNOTATOR)
    for name, pw in (("ann", "wrong password"), ("nobody", PASSWORD)):
        with pytest.raises(users.SignInError, match="wrong user name or password"):  # the same words for both
            users.authenticate(team_ws, name, pw)


def test_repeated_failures_slow_sign_in_down_with_one_message_for_every_name(team_ws, monkeypatch):
    """Issue 43.2: a name that exists and one that does not get the same words at every step, so neither the
    messages nor a lock tell who has an account; past FREE_FAILURES the guessing address waits (unchecked, even with
    the right password), the wait doubles, and it passes by itself, or at once through an admin's unlock. Another
    address is not kept out by those failures: the right password from there signs in."""
    now = [1_000_000.0]
    monkeypatch.setattr(users.time, "time", lambda: now[0])
    said = {}
    for name in ("bob", "nobody-here"):
        said[name] = []
        for _ in range(users.FREE_FAILURES + 1):
            with pytest.raises(users.SignInError) as err:
                users.authenticate(team_ws, name, "guess-guess", client=f"client-{name}")
            said[name].append(str(err.value))
    assert said["bob"] == said["nobody-here"] and set(said["bob"]) == {users.REFUSED}
    with pytest.raises(users.SignInError, match="wrong user name or password"):  # waiting: not even checked
        users.authenticate(team_ws, "bob", PASSWORD, client="client-bob")
    assert users.get_user(team_ws, "bob").locked
    now[0] += users.delay_after(users.FREE_FAILURES) + 1  # the wait passes by itself
    assert users.authenticate(team_ws, "BOB", PASSWORD, client="client-bob").name == "bob"  # any case: one name
    assert not users.get_user(team_ws, "bob").locked
    for _ in range(users.CLIENT_FREE_FAILURES + 2):  # one client guessing many names is slowed down too
        with pytest.raises(users.SignInError):
            users.authenticate(team_ws, f"name{_}", "x", client="scanner")
    with pytest.raises(users.SignInError, match="wrong user name"):
        users.authenticate(team_ws, "ann", PASSWORD, client="scanner")
    assert users.authenticate(team_ws, "ann", PASSWORD, client="somewhere-else").name == "ann"
    assert any(r["action"] == "sign-in failed" for r in read_audit(team_ws, user="bob"))
    for _ in range(users.FREE_FAILURES + 1):
        with pytest.raises(users.SignInError):
            users.authenticate(team_ws, "bob", "guess-guess", client="c2")
    with pytest.raises(users.SignInError):
        users.authenticate(team_ws, "bob", PASSWORD, client="c2")
    users.unlock(team_ws, "bob")
    assert users.authenticate(team_ws, "bob", PASSWORD, client="c2").name == "bob"


def test_unicode_names_are_accepted_and_compared_without_case(team_ws):
    """Issue 43.4: zoë (typed decomposed or not) and a Hebrew name are names; ANN beside ann is not a second one."""
    assert users.add_user(team_ws, "zoe\u0308", "annotator", PASSWORD).name == "zoë"
    assert users.add_user(team_ws, "דנה", "annotator", PASSWORD).name == "דנה"
    assert users.authenticate(team_ws, "ZOË", PASSWORD).name == "zoë"
    with pytest.raises(UserError, match="exists already as 'ann'"):
        users.add_user(team_ws, "ANN", "annotator", PASSWORD)
    for bad in ("", "-x", "a b", "evil\u202e", "zero\u200bwidth", "x" * 65):
        with pytest.raises(UserError, match="user name"):
            users.add_user(team_ws, bad, "annotator", PASSWORD)


def test_sessions_forged_expired_or_of_a_disabled_user_are_refused(team_ws):
    token = users.open_session(team_ws, Actor("ann", Role.ANNOTATOR))
    assert users.session_actor(team_ws, token).name == "ann"
    for bad in ("forged-" + token[7:], "", None):
        with pytest.raises(users.SignInError, match="sign in again"):
            users.session_actor(team_ws, bad)
    expired = users.open_session(team_ws, Actor("ann", Role.ANNOTATOR), seconds=-1)
    with pytest.raises(users.SignInError, match="sign in again"):
        users.session_actor(team_ws, expired)
    users.set_role(team_ws, "ann", "researcher")  # a role change applies to the open session at once
    assert users.session_actor(team_ws, token).role == Role.RESEARCHER
    users.set_disabled(team_ws, "ann")
    with pytest.raises(users.SignInError, match="sign in again"):
        users.session_actor(team_ws, token)


def test_bad_account_input_changes_nothing(team_ws):
    before = users.list_users(team_ws)
    for call in (lambda: users.add_user(team_ws, "ann", "annotator", PASSWORD),
                 lambda: users.add_user(team_ws, "x y", "annotator", PASSWORD),
                 lambda: users.add_user(team_ws, "carl", "annotator", "short"),
                 lambda: users.add_user(team_ws, "carl", "boss", PASSWORD),
                 lambda: users.add_user(team_ws, "carl", "annotator", PASSWORD, actor=Actor("rita", Role.RESEARCHER))):
        with pytest.raises(UserError):
            call()
    assert users.list_users(team_ws) == before


# --------------------------------------------------------------------------- roles, checked in core


def test_an_annotator_calling_researcher_functions_is_refused_and_nothing_changes(team_ws, tmp_path):
    from core.review.store import ReviewStore
    from core.runner import jobs

    ann = Actor("ann", Role.ANNOTATOR)
    (tmp_path / "more.txt").write_text("One more sentence .\n")
    corpora, listed = [i.name for i in team_ws.list_corpora()], jobs.list_jobs(team_ws)
    refused = [
        lambda: jobs.submit(team_ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "random", "budget": 5}, actor=ann),
        lambda: team_ws.import_corpus(tmp_path / "more.txt", actor=ann),
        lambda: team_ws.import_upload("more.txt", b"One more sentence .\n", actor=ann),
        lambda: team_ws.delete_corpus("demo-dc", actor=ann),
        lambda: team_ws.set_role("demo-dc", None, actor=ann),
        lambda: team_ws.update_settings(actor=ann, ray_address="local"),
        lambda: ReviewStore(team_ws, "demo-dc@x").save(0, "accepted", ["a"], [], expected_version=0, actor=ann),
        lambda: tasks.create_task(team_ws, ann, "mine", ["ann"], corpus="demo-dc", n_items=3, overlap=0),
        lambda: users.set_role(team_ws, "ann", "admin", actor=ann),
        lambda: read_audit(team_ws, actor=ann),
    ]
    for call in refused:
        with pytest.raises(AccessDenied, match="ann \\(annotator\\) may not"):
            call()
    assert [i.name for i in team_ws.list_corpora()] == corpora and len(jobs.list_jobs(team_ws)) == len(listed)
    assert users.get_user(team_ws, "ann").role == Role.ANNOTATOR and team_ws.settings().ray_address is None
    job = jobs.submit(team_ws, "sleep", {"seconds": 0}, start=False, actor=Actor("rita", Role.RESEARCHER))  # staff may
    with pytest.raises(AccessDenied):
        jobs.delete(team_ws, job.id, actor=ann)
    jobs.delete(team_ws, job.id, actor=Actor("rita", Role.RESEARCHER))


# --------------------------------------------------------------------------- tasks


def test_a_task_splits_items_with_overlap_and_each_annotator_sees_only_theirs(team_ws):
    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    task = tasks.create_task(team_ws, rita, "demo sample", ["ann", "bob"], corpus="demo-dc", n_items=10, overlap=0.2,
                             types=["PER", "LOC"])
    qa, qb = tasks.queue(team_ws, ann, task.id), tasks.queue(team_ws, bob, task.id)
    assert task.items == 10 and len(qa) + len(qb) == 12  # 2 of 10 reviewed twice
    assert len({i.index for i in qa} & {i.index for i in qb}) == 2
    assert [t.id for t in tasks.list_tasks(team_ws, ann)] == [task.id]
    assert tasks.list_tasks(team_ws, Actor("nobody", Role.ANNOTATOR)) == []
    with pytest.raises(AccessDenied):
        tasks.queue(team_ws, ann, task.id, annotator="bob")  # not another annotator's work
    only_bob = next(i for i in qb if i.index not in {q.index for q in qa})
    with pytest.raises(AccessDenied, match="not in ann's queue"):
        tasks.save_annotation(team_ws, ann, task.id, only_bob.index, [])
    first = qa[0]
    saved = tasks.save_annotation(team_ws, ann, task.id, first.index, [Span(0, 1, "PER")])
    assert saved.version == 1 and saved.status == "done"
    with pytest.raises(tasks.TaskConflict, match="saved meanwhile"):  # the same annotator's stale second tab
        tasks.save_annotation(team_ws, ann, task.id, first.index, [], expected_version=0)
    with pytest.raises(UserError, match="outside the sentence"):
        tasks.save_annotation(team_ws, ann, task.id, first.index, [Span(0, 999, "PER")], expected_version=1)
    assert tasks.queue(team_ws, ann, task.id)[0].spans == [Span(0, 1, "PER")]  # the bad saves changed nothing
    progress = {r["annotator"]: r for r in tasks.progress(team_ws, rita, task.id)}
    assert progress["ann"]["done"] == 1 and progress["bob"]["done"] == 0
    log = read_audit(team_ws)
    assert log[0]["action"] == "annotation saved" and log[0]["actor"] == "ann"
    con = connect(team_ws)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("DELETE FROM audit")
    con.close()


def test_a_task_over_a_missing_selection_says_so(team_ws):
    with pytest.raises(UserError, match="selection"):
        tasks.create_task(team_ws, LOCAL, "gone", ["ann"], selection="0123456789abcdef", overlap=0)
    assert tasks.list_tasks(team_ws, LOCAL) == []


# --------------------------------------------------------------------------- agreement


A_CONLL = "John\tB-PER\nSmith\tI-PER\nmet\tO\nAcme\tB-LOC\n.\tO\n\nIn\tO\nParis\tB-LOC\ntoday\tO\n.\tO\n"
B_CONLL = "John\tB-PER\nSmith\tI-PER\nmet\tO\nAcme\tB-ORG\n.\tO\n\nIn\tO\nParis\tB-LOC\ntoday\tI-LOC\n.\tO\n"


def test_agreement_matches_a_hand_computation(tmp_path, capsys):
    """Strict: 1 match (John Smith) of 3 + 3 spans: F1 2/6. Partial: John Smith and Acme (same boundaries) correct,
    Paris vs Paris today partial: (2 + 0.5) / 3. Tokens: 7 of 9 agree; marginals A {PER 2, LOC 2, O 5},
    B {PER 2, LOC 2, ORG 1, O 4}: pe = (4 + 4 + 20) / 81, kappa = (63 - 28) / (81 - 28) = 35/53."""
    (tmp_path / "a.conll").write_text(A_CONLL)
    (tmp_path / "b.conll").write_text(B_CONLL)
    r = agreement_files(tmp_path / "a.conll", tmp_path / "b.conll")
    assert r["sentences"] == 2
    assert r["f1_exact"] == pytest.approx(1 / 3, abs=1e-6)
    assert r["f1_partial"] == pytest.approx(2.5 / 3, abs=1e-6)
    assert r["kappa_token"] == pytest.approx(35 / 53, abs=1e-6)
    assert r["per_type"]["PER"] == {"f1_exact": 1.0, "f1_partial": 1.0, "support": 2}
    assert r["per_type"]["LOC"]["f1_exact"] == 0.0 and r["per_type"]["LOC"]["support"] == 3
    assert r["confusion"]["LOC"] == {"LOC": 0, "ORG": 1, "PER": 0, "—": 1}  # every column, in one order, "—" last
    assert r["confusion"]["—"] == {"LOC": 1, "ORG": 0, "PER": 0, "—": 0} and list(r["confusion"]) == ["LOC", "PER", "—"]
    assert main(["agreement", str(tmp_path / "a.conll"), str(tmp_path / "b.conll"), "--json"]) == 0
    import json

    printed = json.loads(capsys.readouterr().out)
    assert set(printed) >= {"sentences", "f1_exact", "f1_partial", "kappa_token", "per_type"}
    assert printed["kappa_token"] == pytest.approx(35 / 53, abs=1e-6)


def test_agreement_of_identical_annotations_is_one_and_differing_sentences_are_an_error(tmp_path, capsys):
    same = agreement([([Span(0, 1, "PER")], [Span(0, 1, "PER")], 3)])
    assert same["f1_exact"] == same["f1_partial"] == same["kappa_token"] == 1.0
    (tmp_path / "a.conll").write_text(A_CONLL)
    (tmp_path / "c.conll").write_text(A_CONLL.replace("Paris", "Rome"))
    assert main(["agreement", str(tmp_path / "a.conll"), str(tmp_path / "c.conll"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "sentence 2 differs" in err and "'In Paris today .'" in err and "Traceback" not in err


def test_task_agreement_adjudication_and_the_corpus_it_becomes(team_ws, capsys):
    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    task = tasks.create_task(team_ws, rita, "both", ["ann", "bob"], corpus="demo-dc", n_items=3, overlap=1.0, types=["PER", "LOC"])
    for who, spans in ((ann, [Span(0, 1, "PER")]), (bob, [Span(0, 1, "LOC")])):
        for item in tasks.queue(team_ws, who, task.id):
            tasks.save_annotation(team_ws, who, task.id, item.index, spans if item.position == 0 else [])
    got = tasks.answers(team_ws, rita, task.id)
    assert len(got) == 3 and all(set(v) == {"ann", "bob"} for v in got.values())
    assert main(["--workspace", str(team_ws.root), "agreement", "--task", task.id, "--json"]) == 0
    import json

    r = json.loads(capsys.readouterr().out)
    assert r["sentences"] == 3 and r["f1_exact"] == 0.0 and r["per_annotator"]["ann"]["overlapping"] == 3
    open_items = adjudicate.disagreements(team_ws, rita, task.id)
    assert len(open_items) == 1
    with pytest.raises(AccessDenied):
        adjudicate.adjudicate(team_ws, ann, task.id, open_items[0].index, [])
    corpus, report = adjudicate.settled_corpus(team_ws, rita, task.id)
    assert report == {"sentences": 2, "open_disagreements": 1, "awaiting_review": 0, "unanswered": 0}
    adjudicate.adjudicate(team_ws, rita, task.id, open_items[0].index, [Span(0, 1, "PER")], source="ann")
    info, report = adjudicate.import_task(team_ws, rita, task.id, "task-lc")
    assert info.sentences == 3 and info.labeled and report["open_disagreements"] == 0
    assert f"review task {task.id}" in info.source and "annotators ann, bob" in info.source and "F1 exact 0.000" in info.source
    assert team_ws.load_corpus("task-lc").tags[0][0] == "B-PER"
    with pytest.raises(AccessDenied):
        adjudicate.import_task(team_ws, ann, task.id, "sneaky")


def test_a_sentence_assigned_twice_is_settled_only_once_both_answered(team_ws, capsys):
    """One answer of two is not agreement: the second annotator may differ. Such a sentence was exported (and could
    go into LC) and then turned into a disagreement; now it waits, counted apart. A skip counts as an answer."""
    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    task = tasks.create_task(team_ws, rita, "twice", ["ann", "bob"], corpus="demo-dc", n_items=2, overlap=1.0, types=["PER"])
    first, second = (i.index for i in tasks.queue(team_ws, ann, task.id))
    tasks.save_annotation(team_ws, ann, task.id, first, [Span(0, 1, "PER")])
    assert adjudicate.settled_corpus(team_ws, rita, task.id)[1] == \
        {"sentences": 0, "open_disagreements": 0, "awaiting_review": 1, "unanswered": 1}
    with pytest.raises(UserError, match="no settled sentences yet .*1 awaiting another annotator's answer"):
        adjudicate.export_task(team_ws, rita, task.id)
    tasks.save_annotation(team_ws, bob, task.id, first, [])
    assert adjudicate.settled_corpus(team_ws, rita, task.id)[1]["open_disagreements"] == 1
    tasks.save_annotation(team_ws, ann, task.id, second, [Span(0, 1, "PER")])
    tasks.save_annotation(team_ws, bob, task.id, second, [], status="skipped")
    corpus, report = adjudicate.settled_corpus(team_ws, rita, task.id)
    assert report == {"sentences": 1, "open_disagreements": 1, "awaiting_review": 0, "unanswered": 0}
    assert corpus.fields["task_index"] == [second] and corpus.tags[0][0] == "B-PER"
    assert main(["--workspace", str(team_ws.root), "task", "export", task.id, "--out", str(team_ws.root / "t.conll")]) == 0
    assert "1 disagreement open, 0 awaiting another annotator's answer, 0 unanswered: left out" in capsys.readouterr().out


def test_an_answer_or_decision_with_a_type_the_task_does_not_list_is_refused_and_nothing_stored(team_ws):
    rita, ann = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR)
    task = tasks.create_task(team_ws, rita, "per", ["ann"], corpus="demo-dc", n_items=1, overlap=0.0, types=["PER"])
    index = tasks.queue(team_ws, ann, task.id)[0].index
    with pytest.raises(UserError, match=r"type\(s\) '\[x\]\(http://e.example\)' are not this task's \(PER\)"):
        tasks.save_annotation(team_ws, ann, task.id, index, [Span(0, 1, "[x](http://e.example)")])
    with pytest.raises(UserError, match="'PRE' are not this task's"):
        adjudicate.adjudicate(team_ws, rita, task.id, index, [Span(0, 1, "PRE")])
    assert tasks.queue(team_ws, ann, task.id)[0].status is None and adjudicate.items(team_ws, rita, task.id)[0].version == 0
    tasks.save_annotation(team_ws, ann, task.id, index, [], status="skipped")  # a skip carries no spans to check


def test_every_open_disagreement_comes_before_the_decided_ones_and_a_stale_decision_is_refused(team_ws):
    """Found in review: decided items stayed first, so a page showing the first twenty never reached the 21st; and
    two researchers deciding the same item overwrote each other without a word."""
    rita, boss = Actor("rita", Role.RESEARCHER), Actor("boss", Role.ADMIN)
    task = tasks.create_task(team_ws, rita, "four", ["ann", "bob"], corpus="demo-dc", n_items=4, overlap=1.0,
                             types=["PER", "LOC"])
    for who, t in (("ann", "PER"), ("bob", "LOC")):
        for item in tasks.queue(team_ws, Actor(who, Role.ANNOTATOR), task.id):
            tasks.save_annotation(team_ws, Actor(who, Role.ANNOTATOR), task.id, item.index, [Span(0, 1, t)])
    first = adjudicate.disagreements(team_ws, rita, task.id)
    assert len(first) == 4 and all(i.version == 0 for i in first)
    seen = first[0]
    decided = adjudicate.adjudicate(team_ws, rita, task.id, seen.index, [Span(0, 1, "PER")], "ann",
                                    expected_version=seen.version)
    assert decided.version == 1
    assert [i.index for i in adjudicate.disagreements(team_ws, rita, task.id)] == [i.index for i in first[1:]] + [seen.index]
    with pytest.raises(adjudicate.AdjudicationConflict, match="decided by rita since you opened it"):
        adjudicate.adjudicate(team_ws, boss, task.id, seen.index, [], "bob", expected_version=seen.version)
    assert adjudicate.items(team_ws, rita, task.id)[0].adjudicated == [Span(0, 1, "PER")]  # unchanged
    again = adjudicate.adjudicate(team_ws, boss, task.id, seen.index, [], "bob", expected_version=1)
    assert again.adjudicated == [] and again.adjudicated_by == "boss" and again.version == 2


def test_disagreements_and_adjudication_from_the_cli(team_ws, capsys):
    import json

    rita = Actor("rita", Role.RESEARCHER)
    task = tasks.create_task(team_ws, rita, "two", ["ann", "bob"], corpus="demo-dc", n_items=2, overlap=1.0,
                             types=["PER", "LOC"])
    for who, t in (("ann", "PER"), ("bob", "LOC")):
        for item in tasks.queue(team_ws, Actor(who, Role.ANNOTATOR), task.id):
            tasks.save_annotation(team_ws, Actor(who, Role.ANNOTATOR), task.id, item.index, [Span(0, 1, t)])
    ws = ["--workspace", str(team_ws.root)]
    assert main([*ws, "task", "disagreements", task.id]) == 0
    out = capsys.readouterr().out
    first, second = [i.index for i in adjudicate.disagreements(team_ws, rita, task.id)]
    assert f"sentence {first}: to decide (version 0)" in out and "0-1:PER" in out and "2 of 2 still to decide" in out
    assert main([*ws, "task", "adjudicate", task.id, str(first), "--pick", "bob", "--version", "0"]) == 0
    assert "version 1, from bob" in capsys.readouterr().out
    assert main([*ws, "task", "adjudicate", task.id, str(first), "--spans", "", "--version", "0"]) == 2  # stale
    assert "decided by local since you opened it" in capsys.readouterr().err
    assert main([*ws, "task", "adjudicate", task.id, str(second), "--spans", "0-1:O"]) == 2
    assert main([*ws, "task", "adjudicate", task.id, str(second), "--spans", "0:PER"]) == 2
    assert main([*ws, "task", "adjudicate", task.id, str(second), "--pick", "nobody"]) == 2
    assert "expected START-END:TYPE" in capsys.readouterr().err
    assert main([*ws, "task", "adjudicate", task.id, str(second), "--spans", "0-1:PER"]) == 0
    capsys.readouterr()
    assert main([*ws, "task", "disagreements", task.id, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(i["index"], i["version"], i["adjudicated_by"]) for i in listed] == [(first, 1, "local"), (second, 1, "local")]


def test_a_task_needs_real_entity_types(team_ws):
    rita = Actor("rita", Role.RESEARCHER)
    for bad, said in ((["O"], "'O' is not an entity type"), (["PER", "—"], "'—' is not an entity type"),
                      (["B PER"], "without spaces"), ([], "at least one entity type"), (["  "], "at least one"),
                      (["B-PER"], "is a tag, not an entity type"), (["I-"], "is a tag"),  # stored as B-B-PER
                      (["X" * 41], "at most 40")):  # typed; a model's or an LC's E-MAIL is stored as it is:
        with pytest.raises(UserError, match=said):
            tasks.create_task(team_ws, rita, "bad types", ["ann"], corpus="demo-dc", n_items=2, overlap=0.0, types=bad)
    assert tasks.list_tasks(team_ws, rita) == []  # nothing stored
    with pytest.raises(UserError, match="'O' is not an entity type"):
        tasks.save_annotation(team_ws, Actor("ann", Role.ANNOTATOR), tasks.create_task(
            team_ws, rita, "ok", ["ann"], corpus="demo-dc", n_items=1, overlap=0.0, types=["PER", "PER"]).id,
            tasks.queue(team_ws, Actor("ann", Role.ANNOTATOR), tasks.list_tasks(team_ws, rita)[0].id)[0].index,
            [Span(0, 1, "O")])
    assert tasks.list_tasks(team_ws, rita)[0].types == ["PER"]


def test_a_researcher_named_in_a_task_has_a_queue_of_their_own(team_ws):
    rita = Actor("rita", Role.RESEARCHER)
    task = tasks.create_task(team_ws, rita, "with rita", ["ann", "rita"], corpus="demo-dc", n_items=2, overlap=1.0,
                             types=["PER"])
    other = tasks.create_task(team_ws, rita, "without rita", ["ann"], corpus="demo-dc", n_items=1, overlap=0.0,
                              types=["PER"])
    assert [t.id for t in tasks.assigned_tasks(team_ws, rita)] == [task.id]
    assert {t.id for t in tasks.assigned_tasks(team_ws, Actor("ann", Role.ANNOTATOR))} == {task.id, other.id}
    item = tasks.queue(team_ws, rita, task.id)[0]
    assert tasks.save_annotation(team_ws, rita, task.id, item.index, [Span(0, 1, "PER")]).status == "done"


# --------------------------------------------------------------------------- serving


def test_listening_beyond_loopback_needs_accounts(tmp_path, capsys):
    empty = tmp_path / "empty"
    assert main(["--workspace", str(empty), "serve-check", "127.0.0.1"]) == 0
    assert main(["--workspace", str(empty), "serve-check", "0.0.0.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "users add NAME --role admin" in err[0]
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    assert main(["--workspace", str(empty), "users", "add", "boss", "--role", "admin", "--password-file", str(tmp_path / "pw")]) == 0
    assert main(["--workspace", str(empty), "serve-check", "0.0.0.0"]) == 0


def test_app_sh_refuses_to_listen_on_all_interfaces_without_accounts(tmp_path):
    import os
    import socket
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if not (root / ".venv" / "bin" / "python").exists():
        pytest.skip("scripts/app.sh needs the project's .venv (scripts/setup.sh)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, NERSELECT_ADDRESS="0.0.0.0", NERSELECT_PORT=str(port), NERSELECT_WORKSPACE=str(tmp_path / "w"))
    done = subprocess.run(["bash", "scripts/app.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: refusing to listen on 0.0.0.0"), done.stderr[-2000:]
    with socket.socket() as s:  # nothing listens on the port it was given
        assert s.connect_ex(("127.0.0.1", port)) != 0



def test_oidc_takes_the_role_from_the_user_with_that_e_mail(team_ws, tmp_path):
    from core.team.serving import AuthMode, auth_mode

    app_root = tmp_path / "app"
    (app_root / ".streamlit").mkdir(parents=True)
    assert auth_mode(team_ws, "0.0.0.0", app_root) == AuthMode.ACCOUNTS
    (app_root / ".streamlit" / "secrets.toml").write_text('[auth]\nredirect_uri = "https://x/oauth2callback"\n')
    assert auth_mode(team_ws, "0.0.0.0", app_root) == AuthMode.OIDC
    users.add_user(team_ws, "olga", "annotator", None, email="Olga@Example.org")
    assert users.actor_for_email(team_ws, "olga@example.org") == Actor("olga", Role.ANNOTATOR)
    with pytest.raises(users.SignInError, match="users add NAME --email stranger@example.org"):
        users.actor_for_email(team_ws, "stranger@example.org")
    with pytest.raises(users.SignInError, match="wrong user name or password"):  # no password: no password sign-in
        users.authenticate(team_ws, "olga", "")
    (app_root / ".streamlit" / "secrets.toml").write_text("[auth\n")
    with pytest.raises(UserError, match="not valid TOML"):
        auth_mode(team_ws, "0.0.0.0", app_root)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(1, 6), st.floats(0.0, 1.0), st.integers(0, 5))
def test_overlap_assignment_is_balanced(n_items, n_people, overlap, seed):
    """Issue 43.7: a 4-sentence task at 0.5 overlap gave ann 2 and bob 4. Every annotator's share now differs by at
    most one item, the overlap share is what was asked, and nobody reviews an item twice."""
    people = [f"p{k}" for k in range(n_people)]
    if overlap > 0 and n_people < 2:
        return
    who = tasks.assign(n_items, people, overlap, seed)
    load = [sum(p in names for names in who) for p in people]
    assert max(load) - min(load) <= 1
    assert sum(len(names) == 2 for names in who) == (math.ceil(round(overlap * n_items, 9)) if overlap else 0)
    assert all(len(set(names)) == len(names) for names in who)
    assert tasks.assign(4, ["ann", "bob"], 0.5) != [["ann", "bob"], ["bob"], ["ann", "bob"], ["bob"]]


def test_a_task_carries_a_models_suggestions_and_only_answers_count(team_ws, tiny_bert_dir, tmp_path):
    """Issue 43.6: a task's items carry an NER model's spans as suggestions; what an annotator saves (accepted,
    corrected or rejected) is the answer, the audit and the progress say which; agreement reads answers only."""
    from tests.tiny_models import build_rigged_ner

    # under the workspace, as a finished NER run's model is: a researcher names no other server folder (core.access)
    model = build_rigged_ner(team_ws.runs_dir / "rigged", tiny_bert_dir, "LOC")
    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    task = tasks.create_task(team_ws, rita, "suggested", ["ann", "bob"], corpus="demo-dc", n_items=2, overlap=1.0,
                             types=["PER", "LOC"], suggest_model=str(model))
    assert task.suggested_by == str(model) and tasks.get_task(team_ws, task.id).suggested_by == str(model)
    items = tasks.queue(team_ws, ann, task.id)
    assert all(i.suggested == [Span(k, k + 1, "LOC") for k in range(len(i.tokens))] for i in items)  # S-LOC on every word
    assert all(i.spans == [] and i.status is None for i in items)  # a suggestion is not an answer
    for item in items:  # ann keeps the suggestions as they are; bob rejects them and marks one span of his own
        tasks.save_annotation(team_ws, ann, task.id, item.index, item.suggested)
        tasks.save_annotation(team_ws, bob, task.id, item.index, [Span(0, 2, "PER")])
    saved = [e["detail"] for e in read_audit(team_ws, actor=LOCAL) if e["action"] == "annotation saved"]
    n0 = len(items[0].tokens)
    assert {"accepted": n0, "rejected": 0, "added": 0} in [d["suggestions"] for d in saved]
    assert {"accepted": 0, "rejected": n0, "added": 1} in [d["suggestions"] for d in saved]
    rows = {r["annotator"]: r for r in tasks.progress(team_ws, rita, task.id)}
    total = sum(len(i.tokens) for i in items)
    assert rows["ann"]["suggestions accepted"] == total and rows["bob"]["suggestions rejected"] == total
    assert rows["bob"]["suggestions added"] == 2
    answers = tasks.answers(team_ws, rita, task.id)
    assert answers[items[0].index]["bob"] == [Span(0, 2, "PER")]  # the answer, not the suggestion
    result = agreement([(answers[i.index]["ann"], answers[i.index]["bob"], len(i.tokens)) for i in items])
    assert result["f1_exact"] == 0.0
    with pytest.raises(Exception, match="ner_config|not a|model"):
        tasks.create_task(team_ws, rita, "bad", ["ann"], corpus="demo-dc", n_items=1, overlap=0.0,
                          suggest_model=str(tmp_path / "nope"))
    assert len(tasks.list_tasks(team_ws, rita)) == 1  # the refused task left nothing behind


def test_a_cookie_handoff_is_pending_until_redeemed_once():
    """The page resends its code on every run while it is pending (a page switch can replace the first script before
    the browser ran it); the route redeems it once, after which it is neither pending nor redeemable."""
    import time

    from core.team import websession

    ends = time.time() + 60
    code = websession.handoff("tok", ends)
    assert websession.pending(code)
    assert websession.redeem(code) == ("tok", ends)
    assert not websession.pending(code)
    assert websession.redeem(code) is None
    assert not websession.pending("never issued")


def test_a_write_from_a_tab_opened_before_a_disable_demotion_or_sign_out_is_judged_as_things_are_now(team_ws):
    """Found in review: a button's callback runs before the app checks the session again, with the user as the tab's
    last run saw them: a disabled annotator's answer was stored, a demoted researcher adjudicated."""
    rita, ann = users.session_actor(team_ws, users.open_session(team_ws, Actor("rita", Role.RESEARCHER))), \
        users.session_actor(team_ws, token := users.open_session(team_ws, Actor("ann", Role.ANNOTATOR)))
    task = tasks.create_task(team_ws, rita, "t", ["ann"], corpus="demo-dc", n_items=3, overlap=0.0, types=["PER"])
    first, second, third = tasks.queue(team_ws, ann, task.id)
    tasks.save_annotation(team_ws, ann, task.id, first.index, [], "done", first.version)  # the session as it was
    users.set_disabled(team_ws, "ann")
    with pytest.raises(UserError, match="session has ended"):
        tasks.save_annotation(team_ws, ann, task.id, second.index, [], "done", second.version)
    users.set_disabled(team_ws, "ann", False)
    ann = users.session_actor(team_ws, token := users.open_session(team_ws, Actor("ann", Role.ANNOTATOR)))
    users.close_session(team_ws, token)
    with pytest.raises(UserError, match="session has ended"):
        tasks.save_annotation(team_ws, ann, task.id, third.index, [], "done", third.version)
    assert [i.status for i in tasks.queue(team_ws, Actor("ann", Role.ANNOTATOR), task.id)] == ["done", None, None]
    users.set_role(team_ws, "rita", "annotator")
    with pytest.raises(AccessDenied, match="rita \\(annotator\\) may not"):
        tasks.create_task(team_ws, rita, "t2", ["ann"], corpus="demo-dc", n_items=3, overlap=0.0, types=["PER"])
    assert rita == Actor("rita", Role.RESEARCHER)  # an actor still compares by name and role


def test_a_type_that_came_with_a_model_is_stored_as_it_is():
    """Found in review: the tag check refused E-MAIL, a real type, when a model's predictions were accepted."""
    from core.review.store import check_spans, check_type

    assert check_spans([Span(0, 1, "E-MAIL")], 2) == [Span(0, 1, "E-MAIL")]
    assert check_type("E-MAIL", "a task's entity type") == "E-MAIL"  # typed too: only B- and I- read as tags


def test_settled_sentences_keep_the_corpus_scheme_and_their_import_says_what_it_moved(team_ws, capsys, tmp_path):
    """Found in review: settled sentences were always BIO (a BIOES LC came back as BIO), `task export --out x.jsonl`
    wrote CoNLL, `task import --role bogus` ended in a ValueError traceback, a re-import could not replace the first,
    and storing with role LC moved the LC silently; a task over a file read the workspace corpus of its stem."""
    import json

    from core.data.corpus import Corpus

    rita, ann = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR)
    team_ws.save_corpus(Corpus(tokens=[["Ada", "Lovelace", "wrote"], ["Bob", "ran"]],
                               tags=[["B-PER", "E-PER", "O"], ["S-PER", "O"]]), "bioes-lc")
    task = tasks.create_task(team_ws, rita, "s", ["ann"], corpus="bioes-lc", n_items=2, overlap=0.0, types=["PER"])
    for item in tasks.queue(team_ws, ann, task.id):
        tasks.save_annotation(team_ws, ann, task.id, item.index, [Span(0, 2, "PER")])
    assert adjudicate.task_scheme(team_ws, task.id).value == "bioes"
    assert adjudicate.settled_corpus(team_ws, rita, task.id)[0].tags[0][:2] == ["B-PER", "E-PER"]
    assert adjudicate.settled_corpus(team_ws, rita, task.id, "bio")[0].tags[0][:2] == ["B-PER", "I-PER"]
    out = tmp_path / "settled.jsonl"
    assert main(["--workspace", str(team_ws.root), "task", "export", task.id, "--out", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["tokens"][:2] == ["Ada", "Lovelace"]
    with pytest.raises(SystemExit):  # argparse names the roles
        main(["--workspace", str(team_ws.root), "task", "import", task.id, "--name", "x", "--role", "bogus"])
    with pytest.raises(UserError, match="unknown role 'bogus'"):
        adjudicate.import_task(team_ws, rita, task.id, "x", "bogus")
    capsys.readouterr()
    assert main(["--workspace", str(team_ws.root), "task", "import", task.id, "--name", "settled", "--role", "LC"]) == 0
    assert "warning:" in capsys.readouterr().err and team_ws.corpus_for_role("lc") == "settled"
    with pytest.raises(UserError, match="already exists"):
        adjudicate.import_task(team_ws, rita, task.id, "settled", scheme="bio")
    assert adjudicate.import_task(team_ws, rita, task.id, "settled", scheme="bio", overwrite=True)[0].tag_scheme == "bio"
    (tmp_path / "bioes-lc.txt").write_text("Another file entirely\n")
    with pytest.raises(UserError, match="is a file: import it first"):
        tasks.create_task(team_ws, LOCAL, "f", ["ann"], corpus=str(tmp_path / "bioes-lc.txt"), n_items=1, overlap=0.0)


def test_small_team_papercuts(team_ws, capsys):
    """Found in review: an overlap of 0.07 of 100 doubled 8 items (a float rounded up), invisible characters made two
    user names look alike, and `task adjudicate` without --version replaced another's decision silently."""
    assert sum(len(a) > 1 for a in tasks.assign(100, ["a", "b"], 0.07)) == 7
    for name in ("ann\ufe0f", "\u3164", "ann\u034f"):
        with pytest.raises(UserError, match="user name"):
            users.check_name(name)
    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    task = tasks.create_task(team_ws, rita, "d", ["ann", "bob"], corpus="demo-dc", n_items=1, overlap=1.0, types=["PER"])
    index = tasks.queue(team_ws, ann, task.id)[0].index
    tasks.save_annotation(team_ws, ann, task.id, index, [Span(0, 1, "PER")])
    tasks.save_annotation(team_ws, bob, task.id, index, [])
    adjudicate.adjudicate(team_ws, rita, task.id, index, [], source="bob")
    capsys.readouterr()
    assert main(["--workspace", str(team_ws.root), "task", "adjudicate", task.id, str(index), "--pick", "ann"]) == 0
    assert "replacing the decision of rita (version 1)" in capsys.readouterr().err


def test_a_disabled_annotators_unanswered_items_can_be_handed_on(team_ws, capsys):
    """Found in review: a disabled annotator's items were stranded (overlap items never settled; only `task adjudicate`
    one by one got them out), and the Tasks page did not say who was disabled."""
    from core.team.reassign import reassign

    rita, ann, bob = Actor("rita", Role.RESEARCHER), Actor("ann", Role.ANNOTATOR), Actor("bob", Role.ANNOTATOR)
    users.add_user(team_ws, "cy", "annotator", PASSWORD)
    task = tasks.create_task(team_ws, rita, "r", ["ann", "bob"], corpus="demo-dc", n_items=4, overlap=0.5, types=["PER"])
    first = tasks.queue(team_ws, bob, task.id)[0]
    tasks.save_annotation(team_ws, bob, task.id, first.index, [])
    users.set_disabled(team_ws, "bob")
    assert next(r for r in tasks.progress(team_ws, rita, task.id) if r["annotator"] == "bob")["account"] == "disabled"
    left = next(r for r in tasks.progress(team_ws, rita, task.id) if r["annotator"] == "bob")["left"]
    with pytest.raises(UserError, match="disabled"):
        reassign(team_ws, rita, task.id, "ann", "bob")  # to a disabled account: refused
    with pytest.raises(AccessDenied):
        reassign(team_ws, ann, task.id, "bob", "cy")
    assert main(["--workspace", str(team_ws.root), "task", "reassign", task.id, "bob", "cy"]) == 0
    assert f"{left} unanswered item(s) of bob handed to cy" in capsys.readouterr().out
    assert len(tasks.queue(team_ws, Actor("cy", Role.ANNOTATOR), task.id)) == left
    assert "cy" in tasks.get_task(team_ws, task.id).annotators
    assert [i.index for i in tasks.queue(team_ws, bob, task.id)] == [first.index]  # the answered one stays bob's
    cy = Actor("cy", Role.ANNOTATOR)
    shared = {i.index for i in tasks.queue(team_ws, ann, task.id)} & {i.index for i in tasks.queue(team_ws, cy, task.id)}
    done = reassign(team_ws, rita, task.id, "ann", "cy")  # the items cy has already stay ann's: none reviewed twice
    assert done["kept"] == len(shared) >= 1
    assert shared <= {i.index for i in tasks.queue(team_ws, ann, task.id)}


def test_an_account_named_local_is_never_the_machines_owner_and_names_are_handed_on_as_stored(team_ws):
    """Found in review: Actor equality read name and role only, so an admin account named "local" was LOCAL and passed
    every server-path check; `task reassign T bob ANN` made a second annotator "ANN" beside ann; a demoted admin kept
    passing the checks after require() (it read the role, then the tab's old actor was used)."""
    from core.access import check_server_path, require
    from core.team.reassign import reassign

    with pytest.raises(UserError, match="reserved"):
        users.add_user(team_ws, "Local", "admin", PASSWORD)
    assert Actor("local", Role.ADMIN) != LOCAL
    with pytest.raises(AccessDenied):
        check_server_path(Actor("local", Role.ADMIN), "/etc/hostname", team_ws.root, "import")
    rita = Actor("rita", Role.RESEARCHER)
    task = tasks.create_task(team_ws, rita, "r", ["bob"], corpus="demo-dc", n_items=3, overlap=0.0, types=["PER"])
    assert reassign(team_ws, rita, task.id, "BOB", "ANN")["moved"] == 3
    assert tasks.get_task(team_ws, task.id).annotators == ["bob", "ann"]
    assert len(tasks.queue(team_ws, Actor("ann", Role.ANNOTATOR), task.id)) == 3
    users.add_user(team_ws, "root", "admin", PASSWORD)  # boss is not the last admin
    boss = users.session_actor(team_ws, users.open_session(team_ws, Actor("boss", Role.ADMIN)))
    users.set_role(team_ws, "boss", "researcher")
    assert require(boss, "submit a job").role == Role.RESEARCHER  # the actor as it is now, for the checks after


def test_the_session_routes_answer_the_apps_own_page_only():
    """Found in review: another site's page could POST a form to the sign-in route (text/plain, parsed as JSON) and
    sign a visitor into someone else's account, or out."""
    import time

    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from core.team import websession

    client = TestClient(Starlette(routes=websession.routes()), base_url="http://127.0.0.1:8501")
    code = websession.handoff("tok", time.time() + 60)
    body = json.dumps({"handoff": code})
    for headers in ({"Content-Type": "text/plain"},
                    {"Content-Type": "application/json", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
                    {"Content-Type": "application/json", "Origin": "http://evil.example"}):
        assert client.post(websession.SESSION_PATH, content=body, headers=headers).status_code == 403
    assert websession.pending(code)  # refused before the code was spent
    ok = client.post(websession.SESSION_PATH, content=body, headers={
        "Content-Type": "application/json", "Origin": "http://127.0.0.1:8501", "Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 204 and websession.COOKIE in ok.headers["set-cookie"]
    assert client.post(websession.SIGNOUT_PATH, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert client.post(websession.SIGNOUT_PATH, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 204


def test_a_sign_in_code_opens_the_session_for_the_browser_that_signed_in_only():
    """Found in review: the one-time code opened the session from any client within its 120 s."""
    import time

    from starlette.applications import Starlette
    from starlette.testclient import TestClient
    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    from core.team import websession

    token = bytes(range(16))
    signed_in_with = generate_xsrf_token_string(token)
    code = websession.handoff("tok", time.time() + 60, browser=websession.browser_id(signed_in_with))
    headers = {"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}
    other = TestClient(Starlette(routes=websession.routes()),
                       cookies={websession.BROWSER_COOKIE: generate_xsrf_token_string(bytes(16))})
    assert other.post(websession.SESSION_PATH, content=json.dumps({"handoff": code}), headers=headers).status_code == 403
    assert websession.pending(code)  # another browser's attempt does not spend it
    # the same browser, its cookie's text re-masked since (each health check of a tab does it): found in review
    remasked = generate_xsrf_token_string(token)
    assert remasked != signed_in_with
    mine = TestClient(Starlette(routes=websession.routes()), cookies={websession.BROWSER_COOKIE: remasked})
    assert mine.post(websession.SESSION_PATH, content=json.dumps({"handoff": code}), headers=headers).status_code == 204
