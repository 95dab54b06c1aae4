"""The verdict at the top of the Overview and the Allocation page: one cached :func:`audit.audit_verdict.verdict_table`
of the view's task, systems and subtasks at quota k, and its impact tables per grouping."""
from __future__ import annotations

import streamlit as st

from audit import readable, views
from audit.audit_verdict import pool_sizes, verdict_table
from audit.errors import AuditError
from audit.selection import Selection
from pages.shared import common


@st.cache_resource(show_spinner="Judging the audit…", max_entries=16)
def judged(path: str, version: tuple, selection: Selection, k: int) -> readable.Verdict:
    """The verdict of ``selection`` at quota k (every grouping whose pools exceed k), as the pages show it; shared,
    never mutated."""
    tables = common.load_tables(path, version)
    return readable.verdict(verdict_table(tables, selection, k=k), pool_sizes(tables, selection), k,
                            selection.ci or 0.95)


def verdict(view: views.View, k: int, *, impact: bool = False) -> None:
    """The overall verdict, one row per system, the categories in an expander; with ``impact``, the impact table of
    each grouping up front (or why it is not defined at k)."""
    selection = Selection(view.task, models=view.models, subtasks=view.subtasks, ci=view.ci, n_boot=view.n_boot)
    try:
        found = judged(view.store, view.version, selection, k)
    except AuditError as exc:
        st.info(f"No verdict for this selection: {exc}")
        return
    st.markdown(found.overall)
    st.dataframe(found.systems, hide_index=True, width="stretch", key=f"verdict_systems_{impact}")
    if impact:
        for grouping, shown in found.impact.items():
            st.markdown(f"**Impact ratios by {grouping} at k = {k}**")
            if isinstance(shown, str):
                st.caption(shown)
            else:
                st.dataframe(shown, hide_index=True, width="stretch", key=f"verdict_impact_{grouping}")
    else:
        with st.expander("per system, grouping and group"):
            st.dataframe(found.categories, hide_index=True, width="stretch")
    st.caption(found.note + (f" The verdict reads the pointwise scores; the charts below show {view.mode}."
                             if view.mode != "pointwise" else ""))
