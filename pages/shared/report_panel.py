"""The Allocation page's impact ratios of the scoring mode shown (as ``impact --db`` exports them) and its audit-report
buttons."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from audit import exports, readable, views
from audit.audit_result import impact_table
from audit.errors import AuditError
from audit.reporting import build_report
from audit.view_report import report_settings
from pages.shared import common


@st.cache_data(show_spinner="Computing impact ratios…", max_entries=16)
def impact(view: views.View, k: int) -> pd.DataFrame:
    """Impact ratios at k under every grouping the task declares whose pools exceed k, for the view's selection."""
    return impact_table(common.tables(view), replace(view.selection(), ks=(k,)))


def impact_section(view: views.View, k: int) -> None:
    """The impact ratios of the view's scoring mode at quota k, as exported (codes, every interval bound)."""
    if not st.toggle(f"impact ratios of the {view.mode} scores with their intervals, as exported", key="impact_on"):
        return  # on demand: keeps cold start
    try:
        ratios = impact(view, k)
    except AuditError as exc:
        common.error("No impact ratios for this selection:", exc)
        return
    st.dataframe(ratios, hide_index=True, width="stretch", key="impact_table")
    for grouping in common.tables(view).design(view.task).groupings:
        if grouping not in set(ratios["grouping"]):
            st.caption(readable.not_defined(grouping, None, k))


def report_buttons(view: views.View, k: int, adjust: str = "holm") -> None:
    """HTML and PDF download buttons for the audit report of the current view."""
    st.subheader("Audit report")
    settings = report_settings(view, k, adjust)
    for column, fmt in zip(st.columns(2), ("html", "pdf")):
        column.download_button(f"Audit report ({fmt.upper()})", data=lambda fmt=fmt: build_report(settings, fmt),
                               file_name=f"audit-report-k{k}.{fmt}", mime=exports.MIME[fmt], on_click="ignore",
                               key=f"audit_report_{fmt}", icon=":material/description:")
