"""Overview: what the result store holds, what each page answers, and the view in use."""
import streamlit as st

from audit import charts, views
from audit.metrics.shape import score_shape
from pages.shared import common

st.title("Allocation audit")
st.markdown(
    "Does a language model's score, used to pick the **top k of every candidate pool**, harm a demographic group? "
    "This dashboard compares bias metrics (δ, JSD, EMD, RABBI) with the allocation gaps they should predict "
    "(ΔDP: selection rate gap; ΔEO: selection rate gap among qualified candidates), following the RABBI paper.")
st.markdown(
    "- **Run audit**: score a task with a model into the result store (cached, resumable).\n"
    "- **Allocation gaps**: bias metrics against ΔDP and ΔEO at quota k; ΔDP against k with confidence bands.\n"
    "- **Group correlations**: per group, how well each metric tracks the gaps across models and subtasks.\n"
    "- **Model rankings**: which model is fairest by each metric and by the true gap; NDCG@N agreement.\n"
    "- **CAIRO explorer**: do prompt-based fairness metrics (BOLD-, HONEST-, HolisticBias-style) agree across models, "
    "and which combination of paraphrased prompts makes them agree most.")

current = common.need_view()
stored = common.tables(current)
scores, summary = stored.scores, stored.summary
left, middle, right = st.columns(3)
left.metric("models", summary["model"].nunique())
middle.metric("subtasks", summary["subtask"].nunique())
right.metric("scored candidates", len(scores))
design = stored.design(current.task)
st.text(f"store: {current.store}\ntask: {current.task} · reference group: {current.reference} (stored: "
        f"{design.reference}) · grouping: {current.grouping} · mode: {current.mode} (pool design {current.pool})\n"
        f"qualified: {design.qualification}")

st.subheader("Results in the store")
st.dataframe(summary, hide_index=True, width="stretch")
st.subheader("Models")
st.dataframe(stored.models, hide_index=True, width="stretch")
st.subheader("Label mass")
st.caption(f"Mean share of the next-token probability on the task's labels (pointwise). Below "
           f"{views.LOW_LABEL_MASS:.0%} a model mostly ignores the answer format and its scores are renormalised noise.")
st.dataframe(views.label_mass(scores, current.task), hide_index=True, width="stretch")

rows = scores[(scores["task"] == current.task) & (scores["mode"] == current.mode)]
rows = views.shown(views.regroup(rows, design.groupings[current.grouping]), current, with_reference=True)
common.chart(charts.score_distributions(rows), rows, "score_distributions")
if len(rows):
    shape = score_shape(rows)
    common.chart(charts.score_shape_scatter(shape), shape, "score_shape")
    st.caption("Skewness and kurtosis per model, subtask and group (the RABBI paper's Figure 13): heavily skewed, "
               "heavy-tailed scores are where the average gap δ and EMD stop predicting allocation gaps.")
