"""Allocation gaps: the verdict and impact ratios at quota k first, then each bias metric against ΔDP and ΔEO, and ΔDP
against k with confidence bands."""
from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit import charts, exports, readable, views
from audit.audit_result import impact_table
from audit.errors import AuditError
from audit.metrics.inference import METHODS
from audit.metrics.planner import plan_at, plan_curves
from audit.metrics.schema import is_pairwise
from audit.reporting import build_report
from audit.view_report import report_settings
from pages.shared import common, verdict_panel


@st.cache_resource(show_spinner=False, max_entries=64)
def curves(view: views.View, model: str, subtask: str, gap: str, _table: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                                                   go.Figure]:
    """Every k of one (model, subtask) and its gap-against-k figure with bootstrap bands."""
    rows = views.shown(_table[(_table["model"] == model) & (_table["subtask"] == subtask)], view)
    names = common.names(view)
    title = (f"{charts.GAP_NAMES[gap]} against k: {model}, {subtask} ({round(view.ci * 100)} % bootstrap bands, "
             f"reference {names.get(view.reference, view.reference)})")
    return rows, charts.gap_curves(rows, gap=gap, title=title, names=names)


@st.cache_resource(show_spinner=False, max_entries=64)
def scatter_of(view: views.View, k: int, method: str) -> go.Figure:
    """The metrics-against-gaps scatter at quota k (shared, never mutated: building it costs more than a rerun)."""
    quota, names = common.at_quota(view, k, method), common.names(view)
    return charts.gap_scatter(quota.rows, k=k, correlations=quota.overall(),
                              reference=names.get(view.reference, view.reference), names=names)


@st.cache_resource(show_spinner=False, max_entries=64)
def read_table(view: views.View, k: int, method: str) -> pd.DataFrame:
    """The metric rows at quota k as read on the page (names, intervals, formatted p-values); shared, never mutated."""
    return readable.metric_table(common.at_quota(view, k, method).rows, common.design(view))


@st.cache_data(show_spinner="Planning…", max_entries=32)
def plan(view: views.View, model: str, subtask: str) -> pd.DataFrame:
    """The planner's curves with one (model, subtask) of the view as pilot."""
    scores = common.view_scores(view)
    pilot = scores[(scores["model"] == model) & (scores["subtask"] == subtask)]
    return plan_curves(pilot, reference=view.reference, pool=view.pool, level=view.ci)


def planner_panel(view: views.View, model: str, subtask: str, k: int) -> go.Figure | None:
    """The audit planner for one (model, subtask) as pilot: the target half-width, the answer and the curve."""
    st.subheader("Audit planner")
    if not st.toggle("plan an audit from this pilot: candidates per group for a target CI", key="plan_on"):
        return None
    if is_pairwise(view.mode):
        st.info("The planner resizes pointwise pilots; choose the pointwise scoring mode in the sidebar.")
        return None
    target = st.number_input("target CI half-width of ΔDP", 0.005, 0.5, 0.05, 0.005, format="%.3f", key="plan_target")
    try:
        curve, summary = plan_at(plan(view, model, subtask), k=k, target=target)
    except AuditError as exc:
        common.error("Cannot plan from this pilot:", exc)
        return None
    row = summary.iloc[0]
    beyond = " (extrapolated beyond the largest size simulated)" if row["extrapolated"] else ""
    st.markdown(f"With the model · subtask chosen above as pilot, about **{int(row['needed_n'])} candidates per group** "
                f"give a {round(view.ci * 100)} % CI of ΔDP at k = {k} no wider than ± {target:g} for every group"
                f"{beyond}; the pilot's {int(row['pilot_n'])} per group give ± {row['pilot_half_width']:.3f}. "
                "From the exact engine on pilots resampled to each size.")
    fig = charts.planner_curve(curve, target=target, k=k, names=common.names(view))
    st.plotly_chart(fig, width="stretch", key="chart_planner")
    return fig


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


st.title("Allocation gaps")
current, table, k = common.metric_view("k_gaps")
st.header(f"Verdict and impact ratios at k = {k}")
verdict_panel.verdict(current, k, impact=True)

st.header(f"Bias metrics against allocation gaps at k = {k}")
st.caption(f"One point per (model, subtask, group). Pools follow the design {current.pool}; the k best-scored are "
           "selected. Gaps are signed against the reference group; JSD and EMD have no sign and face |gap|.")
method = st.radio("multiple comparisons", list(METHODS), format_func=METHODS.get, key="p_adjust", horizontal=True)
try:
    quota = common.at_quota(current, k, method)
except AuditError as exc:
    common.error("No metrics for this selection:", exc)
    st.stop()
at_k, overall = quota.rows, quota.overall()
if at_k.empty:
    st.info("No rows for the selected models, subtasks and groups.")
    st.stop()
st.caption(quota.caption())
scatter = scatter_of(current, k, method)
common.chart(scatter, at_k, f"gaps_k{k}")
st.dataframe(read_table(current, k, method), hide_index=True, width="stretch", key="gap_table_read")
with st.expander("every column, with group codes (as in the CSV export)"):
    st.dataframe(at_k, hide_index=True, width="stretch", key="gap_table")

st.header("Gaps against the quota k")
keys = at_k[["model", "subtask"]].drop_duplicates()
labels = [f"{m} · {s}" for m, s in keys.itertuples(index=False)]
left, right = st.columns([3, 1])
choice = left.selectbox("model · subtask", labels, key="curve_key")
gap = right.radio("gap", list(charts.GAP_NAMES), format_func=charts.GAP_NAMES.get, key="curve_gap", horizontal=True)
model, subtask = keys.iloc[labels.index(choice)]
rows, curve = curves(current, model, subtask, gap, table)
common.chart(curve, rows, f"{gap}_curves_{model}_{subtask}")
planner = planner_panel(current, model, subtask, k)
common.bundle_button("allocation_gaps", {f"gaps_k{k}": scatter, f"{gap}_curves": curve,
                                         **({"planner": planner} if planner else {})},
                     {f"gaps_k{k}": at_k, "correlations": overall, f"{gap}_curves": rows}, current, k=k,
                     curve_model=model, curve_subtask=subtask, p_adjust=method)
impact_section(current, k)
report_buttons(current, k, method)
