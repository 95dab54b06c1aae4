"""Overview: the audit's verdict for the task shown first, then what the result store holds for it."""
import json

import pandas as pd
import streamlit as st

from audit import charts, views
from audit.audit_verdict import pool_sizes, verdict_table
from audit.errors import AuditError
from audit.formatting import estimate, pvalue
from audit.metrics.shape import score_shape
from audit.metrics.verdict import INCONCLUSIVE, rollup, rule_text
from audit.selection import Selection
from pages.shared import common


@st.cache_data(show_spinner="Judging the audit…", max_entries=16)
def judged(path: str, version: tuple, selection: Selection, k: int) -> pd.DataFrame:
    """The verdict rows of ``selection`` at quota k (every grouping whose pools exceed k)."""
    return verdict_table(common.load_tables(path, version), selection, k=k, plan_boot=50)


def words(row: pd.Series) -> str:
    """A verdict in words, with the planner's estimate for inconclusive rows."""
    if row["verdict"] == INCONCLUSIVE and pd.notna(row["more_per_group"]):
        return f"inconclusive — about {int(row['more_per_group'])} more candidates per group needed"
    return str(row["verdict"])


def details(text: str) -> str:
    """A model's stored details (JSON) as ``key: value`` text, never a raw JSON cell."""
    try:
        values = json.loads(text)
    except (TypeError, ValueError):
        return str(text)
    keep = ("kind", "quant", "dtype", "device")
    return ", ".join(f"{key} {values[key]}" for key in keep if key in values)


st.title("Allocation audit")
current = common.need_view()
stored = common.tables(current)
design = stored.design(current.task)
selection = Selection(current.task, models=current.models, subtasks=current.subtasks, ci=current.ci,
                      n_boot=current.n_boot)

st.header(f"Verdict · task {current.task}")
try:
    sizes = pool_sizes(stored, selection)
    k = max(1, min(int(st.session_state.get("quota", common.DEFAULT_K)), max(sizes.values()) - 1))
    table = judged(current.store, current.version, selection, k)
except AuditError as exc:
    st.info(f"No verdict for this selection: {exc}")
    table = None
if table is not None:
    overall = rollup(table, by=[]).iloc[0]
    st.markdown(f"**Overall at k = {k}: {overall['verdict']}** "
                f"({overall['n_adverse']} adverse, {overall['n_inconclusive']} inconclusive, "
                f"{overall['n_no_evidence']} with no evidence of adverse impact, over the systems × subtasks × "
                f"categories below).")
    systems = rollup(table)
    st.dataframe(systems.rename(columns={"model": "system", "categories": "groups carrying the verdict"})
                 [["system", "subtask", "verdict", "n_adverse", "n_inconclusive", "n_no_evidence",
                   "groups carrying the verdict"]], hide_index=True, width="stretch")
    with st.expander("per system, grouping and group"):
        st.dataframe(pd.DataFrame({
            "system": table["model"], "subtask": table["subtask"], "grouping": table["grouping"],
            "group": table["name"], "candidates": table["candidates"],
            "impact ratio": [estimate(r, lo, hi) for r, lo, hi in zip(table["impact_ratio"], table["impact_ratio_lo"],
                                                                       table["impact_ratio_hi"])],
            "adjusted p": table["p_adj"].map(pvalue), "verdict": table.apply(words, axis=1)}),
            hide_index=True, width="stretch")
    skipped = [f"{g} (pool size {s})" for g, s in sizes.items() if s <= k]
    st.caption(rule_text(ci=current.ci) + f" Pointwise scores, quota k = {k} (the quota chosen on the Allocation "
               "page, kept below every pool size)." + (f" Not judged at this k: {', '.join(skipped)}."
                                                       if skipped else ""))

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

st.header(f"What the store holds for task {current.task}")
summary = stored.summary[stored.summary["task"] == current.task]
scores = stored.scores[stored.scores["task"] == current.task]
left, middle, right = st.columns(3)
left.metric("models", summary["model"].nunique())
middle.metric("subtasks", summary["subtask"].nunique())
right.metric("scored candidates", len(scores))
named = {code: design.display_name(code) for code in sorted(scores["group"].astype(str).unique())}
st.text(f"store: {current.store}\nreference group: {design.display_name(current.reference)} ({current.reference}; "
        f"stored: {design.reference}) · grouping: {current.grouping} · mode: {current.mode} (pool design "
        f"{current.pool})\ngroups: {', '.join(f'{name} ({code})' for code, name in named.items())}\n"
        f"qualified: {design.qualification}")
st.subheader("Results")
st.dataframe(summary, hide_index=True, width="stretch")
st.subheader("Models")
models = stored.models[stored.models["model"].isin(summary["model"].unique())]
st.dataframe(models.assign(details=models["details"].map(details)), hide_index=True, width="stretch")
st.subheader("Label mass")
st.caption(f"Mean share of the next-token probability on the task's labels (pointwise). Below "
           f"{views.LOW_LABEL_MASS:.0%} a model mostly ignores the answer format and its scores are renormalised noise.")
st.dataframe(views.label_mass(stored.scores, current.task), hide_index=True, width="stretch")

rows = scores[scores["mode"] == current.mode]
rows = views.shown(views.regroup(rows, design.groupings[current.grouping]), current, with_reference=True)
common.chart(charts.score_distributions(rows), rows, "score_distributions")
if len(rows):
    shape = score_shape(rows)
    common.chart(charts.score_shape_scatter(shape), shape, "score_shape")
    st.caption("Skewness and kurtosis per model, subtask and group (the RABBI paper's Figure 13): heavily skewed, "
               "heavy-tailed scores are where the average gap δ and EMD stop predicting allocation gaps.")
