"""Model rankings: fairness rank of each model by the true gap and by each bias metric, and NDCG@N agreement."""
import streamlit as st

from audit import charts
from audit.metrics import model_rankings, ndcg_table
from pages import common, views

st.title("Model rankings")
st.caption("Per subtask, models are ranked by the root mean square over groups of each metric and of the true gap "
           "(1 = least biased). NDCG@N scores how well a metric's ranking finds the truly fairest models.")
current = common.need_view()
table = common.metrics(current)
if table is None:
    st.stop()
k = common.quota_slider(table, key="k_rank")
at_k = views.shown(table[table["k"] == k], current)
if at_k["model"].nunique() < 2:
    st.info("Select at least two models to rank.")
    st.stop()
gap = st.radio("gap", list(charts.GAP_NAMES), format_func=charts.GAP_NAMES.get, key="rank_gap", horizontal=True)
rankings = model_rankings(at_k)
bump = charts.bump_chart(rankings, gap=gap)
common.chart(bump, rankings, f"rankings_{gap}_k{k}")
ndcg = ndcg_table(at_k)
curves = charts.ndcg_curves(ndcg)
common.chart(curves, ndcg, f"ndcg_k{k}")
common.bundle_button("model_rankings", {f"rankings_{gap}_k{k}": bump, f"ndcg_k{k}": curves},
                     {"rankings": rankings, "ndcg": ndcg}, current, k=k, gap=gap)
