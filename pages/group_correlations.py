"""Group correlations: per group, Pearson r of each bias metric with ΔDP and ΔEO across models and subtasks."""
import streamlit as st

from audit import charts
from pages.shared import common, uncertainty


st.title("Group correlations")
st.caption("For each group, the correlation of each bias metric with the allocation gap across the selected "
           "models and subtasks (the RABBI paper's Figure 6). Few points give unstable r: read n and p on hover. "
           "Error bars: bootstrap intervals of r (candidates resampled within groups, metrics and gaps recomputed).")
current, table, k = common.metric_view("k_corr")
quota = uncertainty.at_quota(current, k)
if quota.rows.empty:
    st.info("No rows for the selected models, subtasks and groups.")
    st.stop()
at_k, correlations = quota.rows, quota.correlations
fig = charts.group_correlation_bars(correlations[correlations["scope"] != "overall"].reset_index(drop=True), k=k)
common.chart(fig, correlations, f"group_correlations_k{k}")
st.dataframe(correlations, hide_index=True, width="stretch")
common.bundle_button("group_correlations", {f"group_correlations_k{k}": fig},
                     {"correlations": correlations, f"metrics_k{k}": at_k}, current, k=k)
