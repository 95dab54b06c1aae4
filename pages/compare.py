"""Compare two audited systems (two models, or one model at two precisions) on the candidates both scored."""
from html import escape

import streamlit as st

from audit.enums import Mode
from audit.present import charts, readable
from audit.errors import AuditError
from audit.formatting import at_quota, md_text
from audit.tasks import study
from pages.frame import sidebar
from pages.shared import common, position_panel


def default_pair(models: list[str]) -> tuple[int, int]:
    """Indices of a model and its other precision (``name`` and ``name@4bit``) when the store has one."""
    for index, label in enumerate(models):
        base = label.split("@")[0]
        if "@" in label and base in models:
            return models.index(base), index
    return 0, 1


st.title("Compare two systems")
st.caption("B against A: each group's gap difference with a bootstrap interval — paired where both systems scored the "
           "same candidates (the same resampled candidates for both), with the candidates whose selection flips and "
           "the rank correlation of their scores; unpaired where they ranked different candidates (recorded pools).")
current = sidebar.need_view()
if current.selection.mode != Mode.POINTWISE:
    st.info("Comparisons read pointwise scores; choose the pointwise scoring mode in the sidebar.")
    st.stop()
rows = common.view_scores(current)
models = sorted(rows["model"].unique())
if len(models) < 2:
    st.info("The store holds one system for this mode; score a second model or precision to compare.")
    st.stop()
first, second = default_pair(models)
left, right = st.columns(2)
a = left.selectbox("system A", models, index=first, key="compare_a")
b = right.selectbox("system B", models, index=second, key="compare_b")
try:
    audit = common.audit(current)
    k = common.quota_slider(audit.pool_sizes[audit.grouping], "compare_k", current)
    with st.spinner("Comparing…"):
        found = audit.comparison(a, b, (k,))  # the computation of ``compare --db`` and the report
    gaps, flips, correlation = found.gaps, found.flips, found.correlation
except AuditError as exc:
    common.error("Cannot compare these systems:", exc)
    st.stop()
paired = bool(gaps["paired"].all()) if "paired" in gaps else True
versus = study.versus_records(a, b)
if versus:
    st.subheader(md_text(versus))
    st.caption(study.UNPAIRED_NOTE)
elif not paired:
    st.caption("These systems ranked different candidates (recorded pools): each interval resamples each system's "
               "pools on its own (unpaired), and no candidate can flip between them.")
gap = st.radio("gap", list(charts.GAP_NAMES), format_func=charts.GAP_NAMES.get, key="compare_gap", horizontal=True)
shown = gaps[gaps["group"].isin(current.selection.groups)]
name = charts.GAP_NAMES[gap]
figure = charts.comparison_dots(shown, gap=gap, names=common.names(current),
                                title=f"{name}(B) − {name}(A) {at_quota(k, audit.quota_free)}: A = {escape(a)}, "
                                      f"B = {escape(b)}")
common.chart(figure, shown, f"compare_{gap}_k{k}")
if paired:
    st.subheader("Rank correlation of scores")
    st.dataframe(correlation, hide_index=True, width="stretch", key="compare_correlation",
                 column_config=readable.COMPARE_LABELS)
    flipped = flips[flips["flipped"]]
    st.subheader(f"Selection flips {at_quota(k, audit.quota_free)}: {len(flipped)} of {len(flips)} candidates")
    st.dataframe(readable.named(flipped, common.design(current)), hide_index=True, width="stretch",
                 key="compare_flips", column_config=readable.COMPARE_LABELS)
position_panel.show(current)
