"""Group correlations: per group, Pearson r of each bias metric with ΔDP and ΔEO across models and subtasks."""
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit import charts, views
from audit.metrics.bands import validity_bands
from pages.shared import common, uncertainty


@st.cache_resource(show_spinner=False, max_entries=64)
def at_quota(view: views.View, k: int, _table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, go.Figure]:
    """Rows shown at quota k, their correlations (overall and per group, with bootstrap bands) and the bar chart."""
    rows = views.shown(_table[_table["k"] == k], view)
    index, draws = uncertainty.draws(view)
    correlations = validity_bands(rows, index, draws, level=view.ci)
    by_group = correlations[correlations["scope"] != "overall"].reset_index(drop=True)
    return rows, correlations, charts.group_correlation_bars(by_group, k=k)


st.title("Group correlations")
st.caption("For each group, the correlation of each bias metric with the allocation gap across the selected "
           "models and subtasks (the RABBI paper's Figure 6). Few points give unstable r: read n and p on hover. "
           "Error bars: bootstrap intervals of r (candidates resampled within groups, metrics and gaps recomputed).")
current, table, k = common.metric_view("k_corr")
if views.shown(table[table["k"] == k], current).empty:
    st.info("No rows for the selected models, subtasks and groups.")
    st.stop()
at_k, correlations, fig = at_quota(current, k, table)
common.chart(fig, correlations, f"group_correlations_k{k}")
st.dataframe(correlations, hide_index=True, width="stretch")
common.bundle_button("group_correlations", {f"group_correlations_k{k}": fig},
                     {"correlations": correlations, f"metrics_k{k}": at_k}, current, k=k)
