"""Clicks merged into one run act in the editor's order, once: Streamlit calls the callbacks of a merged run in the
order the merge left them (an earlier click last), which once stored a sentence before the span assigned to it."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def editor() -> None:
    """Save drawn first and the type picker last, so AppTest calls their callbacks in the order a merged run can:
    Save's before Assign's, Assign's before the type button's. "cut" stands for a run that the next click cuts short
    before the editor's buttons are drawn again."""
    import streamlit as st

    from ui_review import ClickOrder, chosen_type, type_picker

    def log(*entry) -> None:
        st.session_state.setdefault("log", []).append(entry)

    st.button("cut", key="cut", on_click=lambda: st.session_state.update(cut_now=True))
    if st.session_state.pop("cut_now", False):
        st.stop()
    buttons = ClickOrder([("assign", lambda: log("edit", chosen_type("t")), ()), ("save", log, ("save",))])
    buttons.button(st, "Save", "save")
    buttons.button(st, "Assign", "assign")
    type_picker(["PER", "ORG"], "t")


def test_a_type_assign_and_save_merged_into_one_run_act_in_the_editors_order_once():
    at = AppTest.from_function(editor, default_timeout=60).run()
    at.button(key="save").click()
    at.button(key="assign").click()
    at.button(key="t_b1").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["log"] == [("edit", "ORG"), ("save",)]
    at.button(key="save").click().run()  # the next run's clicks are its own
    assert at.session_state["log"] == [("edit", "ORG"), ("save",), ("save",)]
    assert at.session_state["t"] == "ORG"


def test_a_save_after_a_run_cut_short_before_the_buttons_still_saves():
    """Assign acts, the next run stops above the editor (its buttons keep the earlier run's callback), then Save is
    clicked on the page still shown: it must save, not count as done by the Assign's callback."""
    at = AppTest.from_function(editor, default_timeout=60).run()
    save = at.button(key="save")
    at.session_state["t"] = "PER"
    at.button(key="assign").click().run()
    at.button(key="cut").click().run()
    assert [b.key for b in at.button] == ["cut"]
    save.click()
    states = at._tree.get_widget_states()  # the Save the browser still shows: AppTest's tree no longer has it
    states.widgets.append(save._widget_state)
    at._run(states)
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["log"] == [("edit", "PER"), ("save",)]


def stray_button() -> None:
    import streamlit as st

    from ui_review import ClickOrder

    ClickOrder([("save", print, ("save",))]).button(st, "Next", "next")


def test_a_button_that_is_not_one_of_the_editors_steps_fails_when_drawn_not_when_clicked():
    """Its click would call the editor's callback with a key no step has, which does nothing: a silent dead button."""
    at = AppTest.from_function(stray_button, default_timeout=60).run()
    assert at.exception and "'next' is not one of this editor's steps (save)" in at.exception[0].value
