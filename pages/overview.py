"""Overview: the audit's verdict for the task shown first, then what the result store holds for it."""
import streamlit as st

from audit.engine.shape import LOW_LABEL_MASS
from pages.view_models.view import shown
from audit.enums import Mode
from audit.present import charts, readable
from audit.present.tooltips import TOOLTIPS
from audit.errors import AuditError
from audit.formatting import RECORDED_DECISIONS, md_text
from audit.tasks.recorded import mode_name, shown_modes
from pages.frame import sidebar
from pages.shared import common, verdict_panel

st.title("Allocation audit")
current = sidebar.need_view()
stored = common.tables(current)
design = stored.design(current.selection.task)
names = common.names(current)

st.header(f"Verdict · task {current.selection.task}")
judged = common.audit(current, verdict_panel.selection_of(current))
try:
    sizes = judged.sizes(Mode.POINTWISE)
except AuditError as exc:
    st.info(f"No verdict for this selection: {exc}")
else:
    (own, why), free = judged.audited_quota(), judged.quota_free
    top = max(sizes.values()) - 1
    k = own if top <= 1 or free else st.slider("quota k of this verdict", 1, top, min(own, top),
                                               key=f"overview_k_{current.selection.task}",
                                               help=TOOLTIPS["overview_k"])
    verdict_panel.family_choice(current)
    st.markdown(f"**Judged {RECORDED_DECISIONS}** — {why}." if free else
                f"**Judged at k = {k}, {judged.audited_quota(k)[1]}.**")
    verdict_panel.verdict(current, k)
    if not free:  # a verdict on recorded decisions is the same at every k
        verdict_panel.every_quota_row(current)

st.header("What each page answers")
st.markdown(
    "Does a language model's score, used to pick the **top k of every candidate pool**, harm a demographic group? "
    "The pages compare bias metrics (δ, JSD, EMD, RABBI) with the allocation gaps they should predict (ΔDP: "
    "selection-rate gap; ΔEO: selection-rate gap among qualified candidates), following the RABBI paper.\n"
    "- **Run audit**: score a task with a model into the result store (cached, resumable).\n"
    "- **Allocation gaps**: impact ratios and bias metrics against ΔDP and ΔEO at quota k; ΔDP against k.\n"
    "- **Group correlations**: per group, how well each metric tracks the gaps across models and subtasks.\n"
    "- **Model rankings**: which model is fairest by each metric and by the true gap; NDCG@N agreement.\n"
    "- **Compare**: two audited systems (two models, or one model at two precisions) on the same candidates.\n"
    "- **CAIRO explorer**: do prompt-based fairness metrics agree across models, and which combination of "
    "paraphrased prompts makes them agree most.")

st.header(f"What the store holds for task {current.selection.task}")
summary = stored.summary[stored.summary["task"] == current.selection.task]
scores = stored.scores[stored.scores["task"] == current.selection.task]
for column, (label, value) in zip(st.columns(4), (
        ("systems", summary["model"].nunique()), ("subtasks", summary["subtask"].nunique()),
        ("candidates", len(scores[["subtask", "candidate_id"]].drop_duplicates())), ("scores stored", len(scores)))):
    column.metric(label, value)
groups = sorted(scores["group"].astype(str).unique())
mode = mode_name(design, current.selection.mode)
st.markdown(f"**Reference group:** {md_text(design.display_name(current.selection.reference))} (stored: "
            f"{md_text(design.display_name(design.reference))}) · "
            f"**grouping:** {md_text(current.selection.grouping)} · "
            f"**mode:** {mode} "
            f"(pool design {common.audit(current).pool}) · **design:** {design.kind}  \n"
            f"**Groups:** {md_text(', '.join(names.get(g, g) for g in groups))}  \n"
            f"**Qualified:** {md_text(design.qualification)}  \n**Store:** `{current.store}`")
st.subheader("Results")
st.dataframe(readable.summary_table(shown_modes(summary, stored.designs)), hide_index=True, width="stretch")
st.subheader("Models")
models = stored.models[stored.models["model"].isin(summary["model"].unique())]
st.dataframe(readable.model_table(models), hide_index=True, width="stretch")
if mode != current.selection.mode:  # recorded decisions: no model scored them, so no label mass or score distributions
    st.caption(f"These systems are {mode}s: their decisions were recorded where they were deployed, so there is no "
               "label mass, and their scores are read off the recorded ranks or selections (no score distribution "
               "or shape to diagnose).")
    st.stop()
st.subheader("Label mass")
st.caption(f"Mean share of the next-token probability on the task's labels (pointwise). Below "
           f"{LOW_LABEL_MASS:.0%} a model mostly ignores the answer format and its scores are renormalised noise.")
diagnostics = common.audit(current).diagnostics
st.dataframe(readable.label_mass_table(diagnostics.label_mass), hide_index=True, width="stretch")
if diagnostics.answers is not None:
    st.subheader("Pairwise answers")
    st.caption("Per model, the shares of its answers that picked no one candidate (irregular, ties included) and "
               "that called a tie, and of its pairs whose answer flipped with the order the two were shown in (the "
               "paper's Table 2).")
    st.dataframe(readable.answer_shares_table(diagnostics.answers), hide_index=True, width="stretch")

try:
    rows = common.audit(current).scores(current.selection.mode, current.selection.grouping)
except AuditError as exc:
    st.info(f"No scores to show for this selection: {exc}")
    st.stop()
rows = shown(rows, current, with_reference=True)
common.chart(charts.score_distributions(rows, names), rows, "score_distributions")
if len(rows):
    shape = common.audit(current).shape.moments
    common.chart(charts.score_shape_scatter(shape), shape, "score_shape")
    st.caption("Skewness and kurtosis per model, subtask and group (the RABBI paper's Figure 13): heavily skewed, "
               "heavy-tailed scores are where the average gap δ and EMD stop predicting allocation gaps.")
