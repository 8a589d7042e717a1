"""Clicks merged into one run act in the editor's order, once: Streamlit calls the callbacks of a merged run in the
order the merge left them (an earlier click last), which once stored a sentence before the span assigned to it."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def editor() -> None:
    """Save drawn first and the type picker last, so AppTest calls their callbacks in the order a merged run can:
    Save's before Assign's, Assign's before the type button's."""
    import streamlit as st

    from ui_review import chosen_type, in_click_order, type_picker

    def log(*entry) -> None:
        st.session_state.setdefault("log", []).append(entry)

    clicked = in_click_order([("assign", lambda: log("edit", chosen_type("t")), ()), ("save", log, ("save",))])
    st.button("Save", key="save", on_click=clicked)
    st.button("Assign", key="assign", on_click=clicked)
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
