"""What the CAIRO explorer page shows, free of Streamlit: the scorers, decodings and paraphrase sources a store holds,
the search over every dimension and metric pair, and the three figures (with their tables) of one pair and m."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from audit.present import charts
from audit.cairo.bias import metric_cells
from audit.cairo.prompts import ORIGINAL
from audit.cairo.scored import scored_continuations
from audit.cairo.search import Options, PairResult, correlation_table, ranking_table, search_all, source_table
from audit.store.database import Store

MAX_M = 6
SEARCH_LABELS = {"same": "same combination for both metrics (the paper's code)",
                 "independent": "each metric its own combination (wider, more optimistic)"}


def choices(path: str) -> tuple[list[str], list[str], list[str]]:
    """The toxicity scorers, decodings and paraphrase-set sources with scored CAIRO continuations in the store."""
    with Store(path, create=False) as store:
        table = store.cairo_table()
    return (sorted(table["scorer"].unique()), sorted(table["decoding"].unique()),
            sorted(table.loc[table["prompt_set"] != ORIGINAL, "source"].unique()))


def prompt_sets(path: str) -> tuple[list[str], list[str], list[str]]:
    """(the prompt-based metrics, their bias dimensions, the models) of the store's CAIRO continuations: its own
    prompt sets, independent of the allocation tasks."""
    with Store(path, create=False) as store:
        table = store.cairo_table()
    return tuple(sorted(table[column].astype(str).unique()) for column in ("metric", "dimension", "model"))


def search(path: str, scorer: str, decoding: str, rule: str = "same",
           paraphraser: str | None = None) -> tuple[list[PairResult], pd.DataFrame]:
    """CAIRO (search ``rule``, with its permutation null and held-out r) for every dimension, metric pair and
    m = 1 … MAX_M (on the sets ``paraphraser`` wrote, when given), and its correlation table."""
    with Store(path, create=False) as store:
        table = scored_continuations(store, scorer=scorer, decoding=decoding)
    results = search_all(metric_cells(table), MAX_M, Options(search=rule, paraphraser=paraphraser))
    return results, correlation_table(results)


def figures(results: list[PairResult], table: pd.DataFrame, rule: str, dimension: str, pair: tuple[str, str],
            m: int) -> tuple[dict[str, go.Figure], dict[str, pd.DataFrame]]:
    """The page's three figures and their tables for one dimension, metric pair and m of a :func:`search`."""
    mine = [r for r in results if r.dimension == dimension and (r.metric_a, r.metric_b) == pair]
    chosen = next(r for r in mine if r.m == m)
    rows = table[(table["dimension"] == dimension) & (table["metric_a"] == pair[0]) & (table["metric_b"] == pair[1])]
    sources = pd.concat([source_table(r).assign(m=r.m) for r in mine], ignore_index=True)
    ranks = ranking_table(chosen)
    name = f"{dimension}_{pair[0]}_{pair[1]}_{rule}"
    title = f"{dimension}: {pair[0]} vs {pair[1]} ({len(chosen.models)} models)"
    return ({f"cairo_r_{name}": charts.cairo_correlation_curves(rows, title=title),
             f"cairo_sources_{name}": charts.cairo_source_bars(sources),
             f"cairo_rankings_{name}_m{m}": charts.cairo_rankings(ranks)},
            {f"cairo_r_{name}": rows.assign(best_sets_a=rows["best_sets_a"].map(" + ".join),
                                            best_sets_b=rows["best_sets_b"].map(" + ".join)),
             f"cairo_sources_{name}": sources, f"cairo_rankings_{name}_m{m}": ranks})
