"""The Allocation page's impact-ratio table and audit-report buttons."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dataclasses import replace

from audit import exports
from audit.audit_result import impact_table
from audit.errors import AuditError
from audit.reporting import ReportSettings, build_report
from audit import views
from pages.shared import common


@st.cache_data(show_spinner="Computing impact ratios…", max_entries=16)
def impact(view: views.View, k: int) -> pd.DataFrame:
    """Impact ratios at k under every grouping the task declares, for the view's selection."""
    return impact_table(common.tables(view), replace(view.selection(), ks=(k,)))


def report_settings(view: views.View, k: int, adjust: str = "holm") -> ReportSettings:
    """The audit report of the current view: its own selection (grouping, reference, models, subtasks, groups,
    preset, cut-off, intervals, p-value adjustment) at quota k."""
    return ReportSettings(store=view.store, task=view.task, models=view.models, mode=view.mode,
                          reference=view.reference, grouping=view.grouping, subtasks=view.subtasks, groups=view.groups,
                          preset=view.preset, max_inconsistent=view.max_inconsistent, k=k, ci=view.ci,
                          n_boot=view.n_boot, adjust=adjust)


def impact_section(view: views.View, k: int) -> None:
    """The impact-ratio table at quota k (NYC Local Law 144, EEOC four-fifths)."""
    st.subheader(f"Impact ratios at k = {k}")
    st.caption("Selection rate ÷ the most-selected category's rate (NYC Local Law 144), per grouping; four_fifths "
               "flags a ratio below 0.8 (EEOC).")
    if not st.toggle("compute impact ratios with their intervals", key="impact_on"):  # on demand: keeps cold start
        return
    try:
        ratios = impact(view, k)
    except AuditError as exc:
        common.error("No impact ratios for this selection:", exc)
    else:
        st.dataframe(ratios, hide_index=True, width="stretch", key="impact_table")


def report_buttons(view: views.View, k: int, adjust: str = "holm") -> None:
    """HTML and PDF download buttons for the audit report of the current view."""
    st.subheader("Audit report")
    settings = report_settings(view, k, adjust)
    html_column, pdf_column = st.columns(2)
    for column, fmt in ((html_column, "html"), (pdf_column, "pdf")):
        column.download_button(f"Audit report ({fmt.upper()})", data=lambda fmt=fmt: build_report(settings, fmt),
                               file_name=f"audit-report-k{k}.{fmt}", mime=exports.MIME[fmt], on_click="ignore",
                               key=f"audit_report_{fmt}", icon=":material/description:")
