"""The verdict at the top of the Overview and the Allocation page: the verdicts at every quota k of one cached
:class:`audit.engine.audit.Audit` of the view's task, systems and subtasks, read at the page's k with its impact tables per
grouping."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.view_models.view import View
from audit.enums import Family, Mode
from audit.present import readable
from audit.present.tooltips import TOOLTIPS
from audit.errors import AuditError
from audit.engine.verdict import FAMILIES
from audit.engine.selection import Selection
from audit.formatting import at_quota
from pages.frame.sidebar import keep_family
from pages.shared import common

#: the Overview's family widget
_WIDGET = "overview_family"


def family_choice(view: View) -> Family:
    """A select box for the verdict's multiple-testing family, opening at the view's; the choice goes to the sidebar,
    which puts it in the selection of every page from this run on (:func:`pages.frame.sidebar.keep_family`)."""
    names = tuple(Family)
    return st.selectbox("multiple-testing family of the verdict", names, index=names.index(view.selection.family),
                        format_func=lambda f: f"{f}: {FAMILIES[f]}", key=_WIDGET, help=TOOLTIPS["family"],
                        on_change=lambda: keep_family(st.session_state[_WIDGET]))


@st.cache_resource(show_spinner=False, max_entries=64)
def judged(path: str, version: tuple, selection: Selection, k: int) -> readable.Verdict:
    """The verdict of ``selection`` at quota k, as the pages show it; shared, never mutated."""
    audit = common.audit_of(path, version, selection)
    return readable.verdict(audit.verdicts_at(k), audit.sizes(Mode.POINTWISE), k, selection.ci or 0.95,
                            audit.quota_free)


def selection_of(view: View) -> Selection:
    """The verdict's selection of ``view``: the part of its selection the verdict reads."""
    return view.selection.judged()


def rows_at(view: View, k: int) -> pd.DataFrame:
    """The verdict rows of ``view`` at quota k, every column (as ``verdict --format csv`` exports them)."""
    return common.audit(view, selection_of(view)).verdicts_at(k)


def every_quota_row(view: View) -> None:
    """The verdict of each system at every valid quota k, one compact row per system (where adverse impact appears
    and where it vanishes), from the same cached computation as the verdict above."""
    try:
        with st.spinner("Judging the audit at every quota k…"):
            table = common.audit(view, selection_of(view)).every_quota
    except AuditError as exc:
        st.info(f"No verdict across quotas for this selection: {exc}")
        return
    st.markdown("**The verdict at every quota k** (strongest over subtasks, groupings and groups; adverse cells "
                "counted)")
    st.dataframe(readable.quota_strip(table), hide_index=True, width="stretch", key="verdict_every_k")


def verdict(view: View, k: int, *, impact: bool = False) -> None:
    """The overall verdict, one row per system, the categories in an expander; with ``impact``, the impact table of
    each grouping up front (or why it is not defined at k)."""
    selection = selection_of(view)
    try:
        with st.spinner("Judging the audit at every quota k…"):
            found = judged(view.store, view.version, selection, k)
    except AuditError as exc:
        st.info(f"No verdict for this selection: {exc}")
        return
    free = common.audit(view, selection).quota_free
    st.markdown(found.overall)
    st.caption(f"Multiple testing: {readable.family_words(selection.family)}.")
    st.dataframe(found.systems, hide_index=True, width="stretch", key=f"verdict_systems_{impact}",
                 column_config={readable.CARRYING: st.column_config.TextColumn(width="large")})
    if impact:
        st.caption(readable.DECIDING_NOTE)
        for grouping, shown in found.impact.items():
            st.markdown(f"**Impact ratios by {grouping} {at_quota(k, free)}**")
            if isinstance(shown, str):
                st.caption(shown)
            else:
                st.dataframe(readable.deciding(shown), hide_index=True, width="stretch",
                             key=f"verdict_impact_{grouping}")
    with st.expander("every column of these verdicts (p, adjusted p, family, evidence, …)"):
        st.dataframe(found.categories, hide_index=True, width="stretch", key=f"verdict_every_column_{impact}")
    st.caption(found.note + (f" The verdict reads the pointwise scores; the charts below show {view.selection.mode}."
                             if view.selection.mode != Mode.POINTWISE else ""))
