"""Allocation gaps: each bias metric against ΔDP and ΔEO at quota k, and ΔDP against k with confidence bands."""
import streamlit as st

from audit import charts
from audit.metrics import validity
from pages import common, views

st.title("Allocation gaps")
st.caption("One point per (model, subtask, group). Pools hold one candidate per group; the k best-scored are "
           "selected. Gaps are signed against the reference group; JSD and EMD have no sign and face |gap|.")
current = common.need_view()
table = common.metrics(current)
if table is None:
    st.stop()
k = common.quota_slider(table, key="k_gaps")
at_k = views.shown(table[table["k"] == k], current)
if at_k.empty:
    st.info("No rows for the selected models, subtasks and groups.")
    st.stop()
correlations = validity(at_k)
overall = correlations[correlations["scope"] == "overall"]
scatter = charts.gap_scatter(at_k, k=k, correlations=overall, reference=current.reference)
common.chart(scatter, at_k, f"gaps_k{k}")
st.subheader(f"Metrics and gaps at k = {k}")
st.dataframe(at_k, hide_index=True, width="stretch", key="gap_table")

st.subheader("Gaps against the quota k")
keys = views.shown(table, current)[["model", "subtask"]].drop_duplicates()
labels = [f"{m} · {s}" for m, s in keys.itertuples(index=False)]
left, right = st.columns([3, 1])
choice = left.selectbox("model · subtask", labels, key="curve_key")
gap = right.radio("gap", list(charts.GAP_NAMES), format_func=charts.GAP_NAMES.get, key="curve_gap", horizontal=True)
model, subtask = keys.iloc[labels.index(choice)]
rows = views.shown(table[(table["model"] == model) & (table["subtask"] == subtask)], current)
curves = charts.gap_curves(rows, gap=gap, title=f"{charts.GAP_NAMES[gap]} against k: {model}, {subtask} "
                           f"({int(current.ci * 100)} % bootstrap bands, reference {current.reference})")
common.chart(curves, rows, f"{gap}_curves_{model}_{subtask}")
common.bundle_button("allocation_gaps", {f"gaps_k{k}": scatter, f"{gap}_curves": curves},
                     {f"gaps_k{k}": at_k, "correlations": overall, f"{gap}_curves": rows}, current, k=k,
                     curve_model=model, curve_subtask=subtask)
