"""The Allocation page's panels below its charts: the audit planner, the impact ratios of the scoring mode shown (as
``impact --db`` exports them) and the audit-report buttons."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages.view_models.view import View
from audit.present import charts, exports, readable
from audit.errors import AuditError
from audit.engine.choices import is_pairwise
from audit.reporting import ReportSettings, recorded_report, report_steps
from audit.reporting.content import settings_record
from audit.tasks.recorded import mode_name, shown_modes
from pages.view_models.report_view import report_settings
from pages.shared import common, verdict_panel


def planner_panel(view: View, model: str, subtask: str, k: int) -> go.Figure | None:
    """The audit planner for one (model, subtask) as pilot: the target half-width, the answer and the curve."""
    st.subheader("Audit planner")
    if not st.toggle("plan an audit from this pilot: candidates per group for a target CI", key="plan_on"):
        return None
    if is_pairwise(view.selection.mode):
        st.info("The planner resizes pointwise pilots; choose the pointwise scoring mode in the sidebar.")
        return None
    target = st.number_input("target CI half-width of ΔDP", 0.005, 0.5, 0.05, 0.005, format="%.3f", key="plan_target")
    try:
        with st.spinner("Planning…"):
            curve, summary = common.audit(view).plan_at(model, subtask, k, target)
    except AuditError as exc:
        common.error("Cannot plan from this pilot:", exc)
        return None
    row = summary.iloc[0]
    beyond = " (extrapolated beyond the largest size simulated)" if row["extrapolated"] else ""
    st.markdown(f"With the model · subtask chosen above as pilot, about **{int(row['needed_n'])} candidates per group** "
                f"give a {round(view.selection.ci * 100)} % CI of ΔDP at k = {k} no wider than ± {target:g} for every "
                f"group"
                f"{beyond}; the pilot's {int(row['pilot_n'])} per group give ± {row['pilot_half_width']:.3f}. "
                "From the exact engine on pilots resampled to each size.")
    fig = charts.planner_curve(curve, target=target, k=k, names=common.names(view))
    st.plotly_chart(fig, width="stretch", key="chart_planner")
    return fig


def impact(view: View, k: int) -> pd.DataFrame:
    """Impact ratios at k under every grouping the task declares whose pools exceed k, for the view's selection
    (kept by its cached audit; shared, never mutated)."""
    return common.audit(view).impact((k,))


def bundle_tables(view: View, k: int) -> dict[str, pd.DataFrame]:
    """The verdict and impact tables at quota k, as the CLI exports them, for the report bundle (a table not
    defined for this selection is left out)."""
    out = {}
    for name, build in ((f"verdict_k{k}", verdict_panel.rows_at), (f"impact_k{k}", impact)):
        try:
            out[name] = shown_modes(build(view, k), common.tables(view).designs)
        except AuditError:
            continue
    return out


def impact_section(view: View, k: int) -> None:
    """The impact ratios of the view's scoring mode at quota k, as exported (codes, every interval bound)."""
    mode = view.selection.mode
    shown = mode_name(common.design(view), mode)
    if not st.toggle(f"impact ratios of the {shown if shown != mode else mode + ' score'}s with their intervals, "
                     "as exported", key="impact_on"):
        return  # on demand: keeps cold start
    try:
        ratios = impact(view, k)
    except AuditError as exc:
        common.error("No impact ratios for this selection:", exc)
        return
    st.dataframe(shown_modes(ratios, common.tables(view).designs), hide_index=True, width="stretch",
                 key="impact_table")
    for grouping in common.tables(view).design(view.selection.task).groupings:
        if grouping not in set(ratios["grouping"]):
            st.caption(readable.not_defined(grouping, None, k))


def report_buttons(view: View, k: int | None, adjust: str = "holm") -> None:
    """HTML and PDF buttons that build the audit report of the current view at quota ``k`` (None: on the recorded
    decisions, no quota), each step shown as it runs, then offer it for download."""
    st.subheader("Audit report")
    settings = report_settings(view, k, adjust, **sign_off_fields())
    for column, fmt in zip(st.columns(2), ("html", "pdf")):
        if column.button(f"Build the audit report ({fmt.upper()})", key=f"build_report_{fmt}",
                         icon=":material/description:"):
            with column:
                report = built_report(settings, fmt)
            if report is not None:
                st.session_state[f"report_{fmt}"] = (settings, report)
        done = st.session_state.get(f"report_{fmt}")
        if done and done[0] == settings:
            name = f"audit-report{'' if k is None else f'-k{k}'}.{fmt}"
            column.download_button(f"Audit report ({fmt.upper()})", data=done[1], file_name=name,
                                   mime=exports.MIME[fmt], on_click="ignore", key=f"audit_report_{fmt}",
                                   icon=":material/download:")


def sign_off_fields() -> dict[str, str]:
    """Page 1's sign-off fields and the paper, as the report's settings take them (blank lines where empty)."""
    left, middle, right, paper = st.columns([3, 3, 2, 2])
    date = right.date_input("distribution date", value=None, format="YYYY-MM-DD", key="report_distribution_date",
                            help="the date the report is distributed; printed on page 1 and in the LL144 section")
    return {"auditor": left.text_input("auditor", key="report_auditor", help="printed in page 1's sign-off block"),
            "firm": middle.text_input("firm", key="report_firm", help="printed in page 1's sign-off block"),
            "distribution_date": date.isoformat() if date else "",
            "paper": paper.radio("paper", ("a4", "letter"), format_func=str.capitalize, key="report_paper",
                                 horizontal=True, help="paper size of the PDF")}


def built_report(settings: ReportSettings, fmt: str) -> bytes | None:
    """The report of ``settings`` in ``fmt``, built under a status box that lists each step and a progress bar
    (None, the error shown, when it cannot be built), recorded as a run of the store's audit trail (never the shipped
    demo store's, which is only read)."""
    steps = report_steps(fmt)
    with st.status(f"Building the audit report ({fmt.upper()})…", expanded=True) as status:
        bar = st.progress(0.0)

        def tell(step: str, done: float) -> None:
            bar.progress(done, text=f"step {steps.index(step) + 1} of {len(steps)}: {step}")
            st.write(f"{step[0].upper()}{step[1:]}…")

        try:
            report, run = recorded_report(settings, fmt, f"page: audit report ({fmt.upper()})",
                                          settings_record(settings), tell, download=f"audit-report-k{settings.k}.{fmt}")
        except AuditError as exc:
            status.update(label="The audit report could not be built", state="error")
            common.error("No audit report:", exc)
            return None
        bar.progress(1.0, text="done")
        recorded = f", run #{run} of the store's audit trail" if run else ""
        status.update(label=f"Audit report ({fmt.upper()}) ready to download{recorded}", state="complete",
                      expanded=False)
    return report
