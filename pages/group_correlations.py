"""Group correlations: per group, Pearson r of each bias metric with ΔDP and ΔEO across models and subtasks."""
import plotly.graph_objects as go
import streamlit as st

from audit import formatting

from pages.view_models.view import View
from audit.present import charts
from pages.frame import sidebar
from pages.shared import common


@st.cache_resource(show_spinner=False, max_entries=64)
def bars(view: View, k: int) -> go.Figure:
    """The per-group correlation bars at quota k (shared, never mutated)."""
    correlations = common.at_quota(view, k).correlations
    return charts.group_correlation_bars(correlations[correlations["scope"] != "overall"].reset_index(drop=True), k=k,
                                         names=common.names(view), quota_free=common.audit(view).quota_free)


st.title("Group correlations")
st.caption("For each group, the correlation of each bias metric with the allocation gap across the selected "
           "models and subtasks (the RABBI paper's Figure 6). Few points give unstable r: read n and p on hover. "
           "Error bars: bootstrap intervals of r (candidates resampled within groups, metrics and gaps recomputed).")
current = sidebar.need_view()
table, k = common.metric_view(current, "k_corr")
quota = common.at_quota(current, k)
if quota.rows.empty:
    st.info("No rows for the selected models, subtasks and groups.")
    st.stop()
at_k, correlations = quota.rows, quota.correlations
fig = bars(current, k)
common.chart(fig, correlations, f"group_correlations_k{k}")
st.dataframe(formatting.correlation_table(correlations, common.names(current)), hide_index=True, width="stretch")
common.bundle_button("group_correlations", {f"group_correlations_k{k}": fig},
                     {"correlations": correlations, f"metrics_k{k}": at_k}, current, k=k)
