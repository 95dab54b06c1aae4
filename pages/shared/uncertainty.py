"""Uncertainty on the pages: permutation p-values (adjusted), CI marks, bootstrap bands on r and NDCG, the planner.

The p-values and bootstrap draws come with the metric table (:func:`pages.shared.common.base_rows`)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit import charts
from audit.errors import AuditError
from audit.audit_result import AuditResult
from audit.metrics.inference import METHODS
from audit.metrics.planner import plan_at, plan_curves
from audit.metrics.schema import is_pairwise
from audit import views
from audit.selection import N_PERM
from pages.shared import common

#: what the planner depends on: store, its version, task, mode, grouping, reference, pool design (not the models or
#: groups shown)
Source = tuple[str, tuple, str, str, str, str, str]
REFERENCE, POOL = 5, 6


def _source(view: views.View) -> Source:
    return view.store, view.version, view.task, view.mode, view.grouping, view.reference, view.pool


def _scores(source: Source, keys: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    """The regrouped score rows of the source's task and mode for the given (model, subtask) keys."""
    scores = common.task_scores(*source[:5])
    pairs = pd.MultiIndex.from_frame(scores[["model", "subtask"]].astype(str))
    return scores[pairs.isin(keys)]


def method_choice() -> str:
    """The multiple-comparison method chosen on the page (Holm by default)."""
    return st.radio("multiple comparisons", list(METHODS), format_func=METHODS.get, key="p_adjust", horizontal=True)


@dataclass
class Quota:
    """The view's audit at quota k: its rows (label-mass flags, whether each gap's CI excludes 0) and, computed on
    first use, the correlations and rankings of those rows (:class:`audit.audit_result.AuditResult`)."""

    result: AuditResult
    k: int
    rows: pd.DataFrame

    @cached_property
    def correlations(self) -> pd.DataFrame:
        return self.result.correlations(self.k)

    @cached_property
    def rankings(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return self.result.rankings(self.k)

    def overall(self) -> pd.DataFrame:
        """The overall correlations (one r per gap × metric)."""
        return self.correlations[self.correlations["scope"] == "overall"].reset_index(drop=True)


@st.cache_resource(show_spinner="Computing…", max_entries=64)
def at_quota(view: views.View, k: int, method: str = "holm") -> Quota:
    """The view's audit (:func:`pages.shared.common.audit`, p-values adjusted by ``method`` across the groups ×
    subtasks shown) at quota k; shared by every page, never mutated."""
    result = common.audit(view, method)
    rows = common.with_label_mass(result.at(k), common.tables(view).scores, view.task, view.mode)
    for column in ("dp_gap", "eo_gap"):
        rows[f"{column}_ci_excludes_0"] = charts.excludes_zero(rows, column)
    return Quota(result, k, rows)


def caption(view: views.View, rows: pd.DataFrame, method: str) -> str:
    """How the intervals and p-values were made, for the page."""
    family = rows.groupby("model", observed=True).size().max() if len(rows) else 0
    return (f"Intervals: {round(view.ci * 100)} % percentile bootstrap ({view.n_boot} replicates, candidates resampled "
            f"within each group; r recomputed from the resampled metrics and gaps). p: permutation test of no gap "
            f"({N_PERM} shuffles of the group labels within each model · subtask, exact gaps), adjusted by "
            f"{METHODS[method]} across the {family} groups × subtasks shown per model and k. "
            + charts.SIGNIFICANCE_RULE.format(alpha=round(1 - view.ci, 6)))


@st.cache_data(show_spinner="Planning…", max_entries=32)
def _curves(source: Source, model: str, subtask: str, level: float) -> pd.DataFrame:
    return plan_curves(_scores(source, ((model, subtask),)), reference=source[REFERENCE], pool=source[POOL],
                       level=level)


def planner_panel(view: views.View, model: str, subtask: str, k: int) -> go.Figure | None:
    """The audit planner for one (model, subtask) as pilot: the target half-width, the answer and the curve."""
    st.subheader("Audit planner")
    if not st.toggle("plan an audit from this pilot: candidates per group for a target CI", key="plan_on"):
        return None
    if is_pairwise(view.mode):
        st.info("The planner resizes pointwise pilots; choose the pointwise scoring mode in the sidebar.")
        return None
    target = st.number_input("target CI half-width of ΔDP", 0.005, 0.5, 0.05, 0.005, format="%.3f",
                             key="plan_target")
    try:
        curve, summary = plan_at(_curves(_source(view), model, subtask, view.ci), k=k, target=target)
    except AuditError as exc:
        common.error("Cannot plan from this pilot:", exc)
        return None
    row = summary.iloc[0]
    beyond = " (extrapolated beyond the largest size simulated)" if row["extrapolated"] else ""
    st.markdown(f"With the model · subtask chosen above as pilot, about **{int(row['needed_n'])} candidates per group** give "
                f"a {round(view.ci * 100)} % CI of ΔDP at k = {k} no wider than ± {target:g} for every group"
                f"{beyond}; the pilot's {int(row['pilot_n'])} per group give ± {row['pilot_half_width']:.3f}. "
                "From the exact engine on pilots resampled to each size.")
    fig = charts.planner_curve(curve, target=target, k=k)
    st.plotly_chart(fig, width="stretch", key="chart_planner")
    return fig
