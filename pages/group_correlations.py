"""Group correlations: per group, Pearson r of each bias metric with ΔDP and ΔEO across models and subtasks."""
import streamlit as st

from audit import charts
from audit.metrics import validity
from pages import common, views

st.title("Group correlations")
st.caption("For each group, the correlation of each bias metric with the allocation gap across the selected "
           "models and subtasks (the RABBI paper's Figure 6). Few points give unstable r: read n and p on hover.")
current = common.need_view()
table = common.metrics(current)
if table is None:
    st.stop()
k = common.quota_slider(table, key="k_corr")
at_k = views.shown(table[table["k"] == k], current)
if at_k.empty:
    st.info("No rows for the selected models, subtasks and groups.")
    st.stop()
correlations = validity(at_k)
by_group = correlations[correlations["scope"] != "overall"].reset_index(drop=True)
fig = charts.group_correlation_bars(by_group, k=k)
common.chart(fig, by_group, f"group_correlations_k{k}")
st.dataframe(correlations, hide_index=True, width="stretch")
common.bundle_button("group_correlations", {f"group_correlations_k{k}": fig},
                     {"correlations": correlations, f"metrics_k{k}": at_k}, current, k=k)
