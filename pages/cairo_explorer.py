"""CAIRO explorer: how well prompt-based fairness metrics agree across models, with the original prompts, on average
over prompt combinations, and with the best combination (CAIRO) — next to what the search reaches by chance
(permutation null) and on prompts it did not select on (held-out r); who wrote its prompts; how rankings change."""
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit.present import readable
from audit.cairo import explorer
from audit.cairo.explorer import MAX_M, SEARCH_LABELS
from audit.cairo.search import PairResult, few_models_warning
from audit.errors import AuditError
from audit.store.files import store_version
from pages.frame import sidebar
from pages.shared import common


@st.cache_data(show_spinner=False, max_entries=8)
def choices(path: str, version: tuple) -> tuple[list[str], list[str], list[str]]:
    """:func:`audit.cairo.explorer.choices`, once per store version."""
    return explorer.choices(path)


@st.cache_resource(show_spinner="Searching prompt combinations…", max_entries=8)
def search(path: str, version: tuple, scorer: str, decoding: str, rule: str = "same",
           paraphraser: str | None = None) -> tuple[list[PairResult], pd.DataFrame]:
    """:func:`audit.cairo.explorer.search`, once per store version, scorer, decoding, rule and source (shared, never
    mutated: read at every rerun without unpickling)."""
    return explorer.search(path, scorer, decoding, rule, paraphraser)


@st.cache_resource(show_spinner=False, max_entries=64)
def figures(path: str, version: tuple, scorer: str, decoding: str, rule: str, paraphraser: str | None, dimension: str,
            pair: tuple[str, str], m: int) -> tuple[dict[str, go.Figure], dict[str, pd.DataFrame]]:
    """:func:`audit.cairo.explorer.figures` of the cached search (shared, never mutated)."""
    return explorer.figures(*search(path, version, scorer, decoding, rule, paraphraser), rule, dimension, pair, m)


st.title("CAIRO explorer")
st.caption("CAIRO (Zayed et al.): each metric's bias is Σ over subgroups |mean toxicity of the subgroup − mean "
           "toxicity of the group| of the model's continuations. Combining the original prompts with m − 1 "
           "paraphrase sets and picking the combinations whose biases correlate best across models makes metrics "
           "agree; the average over all combinations shows what an unselected combination gives. The grey band is the best r "
           "the same search reaches with the models shuffled (no agreement at all); the held-out r selects on half "
           "of each set's prompts and measures on the other half.")
current = sidebar.page()
path = current.store if current else st.session_state.get("store_path") or common.default_store()
if not Path(path).is_file():
    st.info("This store does not exist yet: run `python -m audit cairo run` to create it.")
    st.stop()
version = store_version(path)
try:
    scorers, decodings, writers = choices(path, version)
except AuditError as exc:
    common.error("Cannot read CAIRO results from this store:", exc, st.info)
    st.stop()
if not scorers:
    st.info("This store holds no CAIRO results yet: run `python -m audit cairo run --prompts data/cairo --models …`.")
    st.stop()
metrics, dimensions, cairo_models = explorer.prompt_sets(path)
chosen = f"The task chosen in the sidebar ({current.selection.task}) is not used here: " if current else ""
st.info(f"{chosen}CAIRO has its "
        f"own prompt sets, not an allocation task's candidates. This store holds continuations of the "
        f"{', '.join(metrics)} prompts (dimensions: {', '.join(dimensions)}; original prompts and their paraphrases) "
        f"by {', '.join(cairo_models)}.")
left, middle, right = st.columns(3)
scorer = left.selectbox("toxicity scorer", scorers, key="cairo_scorer")
decoding = middle.selectbox("decoding", decodings, key="cairo_decoding", format_func=readable.json_text)
rule = right.selectbox("combination search", list(SEARCH_LABELS), format_func=SEARCH_LABELS.get, key="cairo_search")
paraphraser = left.selectbox("paraphrase sets written by", [None, *writers], key="cairo_paraphraser",
                             format_func=lambda source: "every source" if source is None else source)
try:
    results, table = search(path, version, scorer, decoding, rule, paraphraser)
except AuditError as exc:
    common.error("No CAIRO correlations for these results:", exc, st.info)
    st.stop()

left, middle, right = st.columns(3)
dimension = left.selectbox("bias dimension", sorted(table["dimension"].unique()), key="cairo_dimension")
pairs = sorted({(a, b) for d, a, b in zip(table["dimension"], table["metric_a"], table["metric_b"]) if d == dimension})
pair = middle.selectbox("metric pair", pairs, format_func=" vs ".join, key=f"cairo_pair_{dimension}")
m = right.slider("prompt sets per combination (m)", 1, MAX_M, min(3, MAX_M), key="cairo_m",
                 help="The original prompts plus m − 1 paraphrase sets, drawn with replacement.")
figs, tables = figures(path, version, scorer, decoding, rule, paraphraser, dimension, pair, m)
names = list(figs)
chosen = next(r for r in results if r.dimension == dimension and (r.metric_a, r.metric_b) == pair and r.m == m)
warning = few_models_warning([chosen])
if warning:
    st.warning(warning[0].upper() + warning[1:])
a, b, c, d, e = st.columns(5)
a.metric("CAIRO r (best combination)", f"{chosen.best_r:+.2f}")
b.metric("held-out r", f"{chosen.heldout_r:+.2f}")
c.metric("null 95th percentile", f"{chosen.null_95:+.2f}",
         help=f"best r over {chosen.permutations} model-order shuffles of {pair[0]}")
d.metric("permutation p-value", f"{chosen.p_value:.3f}")
e.metric("original prompts r", f"{chosen.original_r:+.2f}")
st.caption(f"Average r over the {chosen.combinations_a:,} searched combinations: {chosen.average_r:+.2f}.")
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
                         cairo_search=rule, cairo_paraphraser=paraphraser, cairo_models=list(chosen.models))
