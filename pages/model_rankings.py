"""Model rankings: fairness rank of each model by the true gap and by each bias metric, and NDCG@N agreement."""
import plotly.graph_objects as go
import streamlit as st

from pages.view_models.view import View
from audit.present import charts
from pages.frame import sidebar
from pages.shared import common


@st.cache_resource(show_spinner=False, max_entries=64)
def figures(view: View, k: int, gap: str) -> tuple[go.Figure, go.Figure]:
    """The bump chart of ``gap`` and the NDCG@N curves at quota k (shared, never mutated)."""
    rankings, ndcg = common.at_quota(view, k).rankings
    return charts.bump_chart(rankings, gap=gap), charts.ndcg_curves(ndcg)


st.title("Model rankings")
st.caption("Per subtask, models are ranked by the root mean square over groups of each metric and of the true gap "
           "(1 = least biased). NDCG@N scores how well a metric's ranking finds the truly fairest models; its "
           "bands are bootstrap intervals (candidates resampled within groups, every ranking recomputed).")
current = sidebar.need_view()
table, k = common.metric_view(current, "k_rank")
quota = common.at_quota(current, k)
if quota.rows["model"].nunique() < 2:
    st.info("Select at least two models to rank.")
    st.stop()
gap = st.radio("gap", list(charts.GAP_NAMES), format_func=charts.GAP_NAMES.get, key="rank_gap", horizontal=True)
rankings, ndcg = quota.rankings
bump, curves = figures(current, k, gap)
common.chart(bump, rankings, f"rankings_{gap}_k{k}")
common.chart(curves, ndcg, f"ndcg_k{k}")
common.bundle_button("model_rankings", {f"rankings_{gap}_k{k}": bump, f"ndcg_k{k}": curves},
                     {"rankings": rankings, "ndcg": ndcg}, current, k=k, gap=gap)
