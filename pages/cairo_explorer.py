"""CAIRO explorer: how well prompt-based fairness metrics agree across models, with the original prompts, on average
over prompt combinations, and with the best combination (CAIRO); who wrote its prompts; how model rankings change."""
from pathlib import Path

import pandas as pd
import streamlit as st

from audit.errors import AuditError
from pages.shared import common
from pages.shared.cairo_views import MAX_M, choices, figures, search

st.title("CAIRO explorer")
st.caption("CAIRO (Zayed et al.): each metric's bias is Σ over subgroups |mean toxicity of the subgroup − mean "
           "toxicity of the group| of the model's continuations. Combining the original prompts with m − 1 "
           "paraphrase sets and picking the combinations whose biases correlate best across models makes metrics "
           "agree; the average over all combinations shows what chance alone gives.")
current = common.page()
path = current.store if current else st.session_state.get("store_path") or common.default_store()
if not Path(path).is_file():
    st.info("This store does not exist yet: run `python -m audit cairo run` to create it.")
    st.stop()
version = common.store_version(path)
try:
    scorers, decodings = choices(path, version)
except AuditError as exc:
    st.info("Cannot read CAIRO results from this store:")
    st.code(str(exc), language=None)
    st.stop()
if not scorers:
    st.info("This store holds no CAIRO results yet: run `python -m audit cairo run --prompts data/cairo --models …`.")
    st.stop()
left, right = st.columns(2)
scorer = left.selectbox("toxicity scorer", scorers, key="cairo_scorer")
decoding = right.selectbox("decoding", decodings, key="cairo_decoding")
try:
    results, table = search(path, version, scorer, decoding)
except AuditError as exc:
    st.info("No CAIRO correlations for these results:")
    st.code(str(exc), language=None)
    st.stop()

left, middle, right = st.columns(3)
dimension = left.selectbox("bias dimension", sorted(table["dimension"].unique()), key="cairo_dimension")
pairs = sorted({(a, b) for d, a, b in zip(table["dimension"], table["metric_a"], table["metric_b"]) if d == dimension})
pair = middle.selectbox("metric pair", pairs, format_func=" vs ".join, key=f"cairo_pair_{dimension}")
m = right.slider("prompt sets per combination (m)", 1, MAX_M, min(3, MAX_M), key="cairo_m",
                 help="The original prompts plus m − 1 paraphrase sets, drawn with replacement.")
figs, tables = figures(path, version, scorer, decoding, dimension, pair, m)
names = list(figs)
chosen = next(r for r in results if r.dimension == dimension and (r.metric_a, r.metric_b) == pair and r.m == m)
a, b, c = st.columns(3)
a.metric("CAIRO r (best combination)", f"{chosen.best_r:+.2f}")
b.metric("average r over combinations", f"{chosen.average_r:+.2f}")
c.metric("original prompts r", f"{chosen.original_r:+.2f}")
common.chart(figs[names[0]], tables[names[0]], names[0])
st.subheader(f"Best combination at m = {m}")
st.dataframe(pd.DataFrame({"metric": [pair[0]] * len(chosen.sets_a) + [pair[1]] * len(chosen.sets_b),
                           "prompt set": [*chosen.sets_a, *chosen.sets_b],
                           "written by": [*chosen.sources_a, *chosen.sources_b]}), hide_index=True)
common.chart(figs[names[1]], tables[names[1]], names[1])
st.subheader("Model bias with and without CAIRO")
common.chart(figs[names[2]], tables[names[2]], names[2])
if current is not None:
    common.bundle_button("cairo_explorer", figs, tables, current, cairo_dimension=dimension,
                         cairo_metrics=list(pair), cairo_m=m, cairo_scorer=scorer, cairo_decoding=decoding,
                         cairo_models=list(chosen.models))
