"""Allocation gaps: the verdict and impact ratios at quota k first, then each bias metric against ΔDP and ΔEO, and ΔDP
against k with confidence bands."""
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages.view_models.view import View, shown
from audit.present import charts, readable
from audit.present.tooltips import TOOLTIPS
from audit.errors import AuditError
from audit.formatting import at_quota, subtask_name
from audit.tasks.recorded import shown_modes
from audit.engine.choices import METHODS
from pages.allocation.panels import bundle_tables, impact_section, planner_panel, report_buttons
from pages.frame import sidebar
from pages.shared import common, verdict_panel


@st.cache_resource(show_spinner=False, max_entries=64)
def curves(view: View, model: str, subtask: str, gap: str, _table: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                                                   go.Figure]:
    """Every k of one (model, subtask) and its gap-against-k figure with bootstrap bands."""
    rows = shown(_table[(_table["model"] == model) & (_table["subtask"] == subtask)], view)
    names = common.names(view)
    title = (f"{charts.GAP_NAMES[gap]} against k: {model}, {subtask_name(subtask)} "
             f"({round(view.selection.ci * 100)} % bootstrap "
             "bands, "
             f"reference {names.get(view.selection.reference, view.selection.reference)})")
    return rows, charts.gap_curves(rows, gap=gap, title=title, names=names)


@st.cache_resource(show_spinner=False, max_entries=64)
def scatter_of(view: View, k: int, method: str) -> go.Figure:
    """The metrics-against-gaps scatter at quota k (shared, never mutated: building it costs more than a rerun)."""
    quota, names = common.at_quota(view, k, method), common.names(view)
    return charts.gap_scatter(quota.rows, k=k, correlations=quota.overall(), quota_free=quota.result.quota_free,
                              reference=names.get(view.selection.reference, view.selection.reference), names=names)


@st.cache_resource(show_spinner=False, max_entries=64)
def read_table(view: View, k: int, method: str) -> pd.DataFrame:
    """The metric rows at quota k as read on the page (names, intervals, formatted p-values); shared, never mutated."""
    return readable.metric_table(common.at_quota(view, k, method).rows, common.design(view))


st.title("Allocation gaps")
current = sidebar.need_view()
table, k = common.metric_view(current, "k_gaps")
free = common.audit(current).quota_free
st.header(f"Verdict and impact ratios {at_quota(k, free)}")
verdict_panel.verdict(current, k, impact=True)

st.header(f"Bias metrics against allocation gaps {at_quota(k, free)}")
st.caption("One point per (model, subtask, group). "
           + ("Each system's recorded decisions are its selections. " if free else
              f"Pools follow the design {common.audit(current).pool}; the k best-scored are selected. ")
           + "Gaps are signed against the reference group; JSD and EMD have no sign and face |gap|.")
method = st.radio("multiple comparisons", list(METHODS), format_func=METHODS.get, key="p_adjust", horizontal=True,
                  help=TOOLTIPS["p_adjust"])
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
exported = shown_modes(at_k, common.tables(current).designs)  # as `metrics` exports them: recorded systems by name
with st.expander("every column, with group codes (as in the CSV export)"):
    st.dataframe(exported, hide_index=True, width="stretch", key="gap_table")

keys = at_k[["model", "subtask"]].drop_duplicates()
labels = [f"{m} · {subtask_name(s)}" for m, s in keys.itertuples(index=False)]
if free:  # no quota moves a recorded decision: a gap against k would be a flat line
    model, subtask = keys.iloc[0]
    gap, curve, rows = "dp_gap", None, pd.DataFrame()
else:
    st.header("Gaps against the quota k")
    left, right = st.columns([3, 1])
    choice = left.selectbox("model · subtask", labels, key="curve_key")
    gap = right.radio("gap", list(charts.GAP_NAMES), format_func=charts.GAP_NAMES.get, key="curve_gap",
                      horizontal=True)
    model, subtask = keys.iloc[labels.index(choice)]
    rows, curve = curves(current, model, subtask, gap, table)
    common.chart(curve, rows, f"{gap}_curves_{model}_{subtask}")
planner = planner_panel(current, model, subtask, k)
figures, tables = {f"gaps_k{k}": scatter}, {f"gaps_k{k}": exported, "correlations": overall}
if curve is not None:
    figures[f"{gap}_curves"], tables[f"{gap}_curves"] = curve, rows
if planner:
    figures["planner"] = planner
common.bundle_button("allocation_gaps", figures, tables, current,
                     more=lambda: bundle_tables(current, k), k=k, curve_model=model, curve_subtask=subtask,
                     p_adjust=method)  # the verdict and impact tables at k: built on the click
impact_section(current, k)
report_buttons(current, None if free else k, method)
