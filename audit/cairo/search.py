"""CAIRO prompt selection (section 5.3): for two metrics, the combination whose model biases correlate best.

For a metric pair (a, b) and combination size m, every combination c of metric a gives a bias vector B_a[:, c]
over the models, likewise c′ for b. Pearson r(c, c′) = z_a[:, c] · z_b[:, c′] with z the bias centred over models
and scaled to unit norm. Two searches:

- ``same`` (the default, the paper's code): both metrics use the same combination of prompt sets (sets matched by
  name), so r(c) = Σ_models z_a[:, c] z_b[:, c] and the best is the largest of those;
- ``independent``: each metric picks its own combination, r over all pairs (c, c′) — one matrix product Z_aᵀ Z_b in
  row blocks. It searches C² pairs instead of C and is correspondingly more optimistic.

Reported per m, as in the paper's Figure 6: the best r (CAIRO), the average r over the searched combinations (for
``independent`` exact as mean z_a · mean z_b, no product needed) and the original-only r; plus, from
:mod:`audit.cairo.optimism`, how much of the best r the search alone explains (permutation null, held-out r).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from audit.cairo.bias import MetricCells, combination_bias, combination_sets, combination_weights
from audit.cairo.correlation import best_combination, pearson
from audit.cairo.optimism import heldout_r, permutation_test
from audit.errors import AuditError

MIN_MODELS = 3
FEW_MODELS = 5  # below this, warn: a best-of-many r across so few points is near ±1 by chance
SEARCHES = ("same", "independent")


def matched(cells_a: MetricCells, cells_b: MetricCells, search: str) -> tuple[MetricCells, MetricCells]:
    """For the same-combination search, both metrics on the prompt sets they share (by name, same order)."""
    if search == "independent":
        return cells_a, cells_b
    shared = tuple(s for s in cells_a.sets if s in cells_b.sets)
    return cells_a.restricted(sets=shared), cells_b.restricted(sets=shared)


@dataclass(frozen=True)
class Options:
    """How to search and how to measure the search's optimism (0 permutations or splits: not measured)."""

    search: str = "same"
    permutations: int = 200
    splits: int = 10
    seed: int = 0
    paraphraser: str | None = None  # only the original and the sets this source wrote

    def __post_init__(self) -> None:
        if self.search not in SEARCHES:
            raise AuditError(f"--search must be one of {', '.join(SEARCHES)}, got {self.search!r}")
        if self.permutations < 0 or self.splits < 0:
            raise AuditError(f"--permutations and --splits must be ≥ 0, got {self.permutations} and {self.splits}")


@dataclass(frozen=True)
class PairResult:
    """One (dimension, metric pair, m): the correlations, both metrics' best combination and the search's
    optimism (permutation null and held-out r)."""

    dimension: str
    metric_a: str
    metric_b: str
    m: int
    models: tuple[str, ...]
    best_r: float
    average_r: float
    original_r: float
    sets_a: tuple[str, ...]
    sets_b: tuple[str, ...]
    sources_a: tuple[str, ...]  # who wrote or paraphrased each of sets_a
    sources_b: tuple[str, ...]
    bias_a: dict[str, tuple[float, float]]  # model → (original-only bias, best-combination bias)
    bias_b: dict[str, tuple[float, float]]
    combinations_a: int
    combinations_b: int
    search: str = "same"
    heldout_r: float = float("nan")
    null_95: float = float("nan")  # 95th percentile of the best r under shuffled model order
    p_value: float = float("nan")
    permutations: int = 0

    @property
    def few_models(self) -> bool:
        return len(self.models) < FEW_MODELS


def few_models_warning(results: list[PairResult]) -> str | None:
    """The plain warning shown when a comparison has fewer than FEW_MODELS models, or None."""
    few = sorted({len(r.models) for r in results if r.few_models})
    if not few:
        return None
    return (f"only {' / '.join(map(str, few))} models compared: with fewer than {FEW_MODELS} points, the best r out "
            "of many prompt combinations is close to ±1 by chance alone. Read the permutation p-value and the "
            "held-out r, not the best r.")


def search_pair(cells_a: MetricCells, cells_b: MetricCells, m: int, options: Options = Options()) -> PairResult:
    """CAIRO for one metric pair and combination size m, over the models both metrics scored."""
    models = tuple(sorted(set(cells_a.models) & set(cells_b.models)))
    if len(models) < MIN_MODELS:
        raise AuditError(f"{cells_a.dimension}: Pearson r across models needs ≥ {MIN_MODELS} models scored on both "
                         f"{cells_a.metric} and {cells_b.metric}, found {list(models)}")
    cells_a, cells_b = matched(cells_a.restricted(models), cells_b.restricted(models), options.search)
    w_a, w_b = (combination_weights(len(c.sets) - 1, m) for c in (cells_a, cells_b))
    bias_a, bias_b = combination_bias(cells_a, w_a), combination_bias(cells_b, w_b)
    orig_a, orig_b = (combination_bias(c, combination_weights(len(c.sets) - 1, 1))[:, 0] for c in (cells_a, cells_b))
    best, col_a, col_b, average = best_combination(bias_a, bias_b, options.search)
    found = col_a >= 0
    sets_a = tuple(combination_sets(cells_a, w_a[col_a])) if found else ()
    sets_b = tuple(combination_sets(cells_b, w_b[col_b])) if found else ()
    null_95, p_value, used = permutation_test(bias_a, bias_b, options.search, best, options.permutations,
                                              np.random.default_rng(options.seed))
    held = heldout_r(cells_a, cells_b, m, options.search, options.splits, np.random.default_rng(options.seed))
    return PairResult(
        cells_a.dimension, cells_a.metric, cells_b.metric, m, models, best, average, pearson(orig_a, orig_b),
        sets_a, sets_b, tuple(cells_a.sources[cells_a.sets.index(s)] for s in sets_a),
        tuple(cells_b.sources[cells_b.sets.index(s)] for s in sets_b),
        {mo: (float(o), float(b[col_a]) if found else float("nan")) for mo, o, b in zip(models, orig_a, bias_a)},
        {mo: (float(o), float(b[col_b]) if found else float("nan")) for mo, o, b in zip(models, orig_b, bias_b)},
        len(w_a), len(w_b), options.search, held, null_95, p_value, used)


def written_by(cells: dict[tuple[str, str], MetricCells], source: str) -> dict[tuple[str, str], MetricCells]:
    """Every metric's cells on the original prompts and the paraphrase sets ``source`` wrote."""
    known = sorted({s for c in cells.values() for s in c.sources[1:]})
    if source not in known:
        raise AuditError(f"no prompt set was written by {source!r}; sources: {', '.join(known) or 'none'}")
    return {key: c.restricted(sets=tuple(name for i, name in enumerate(c.sets) if i == 0 or c.sources[i] == source))
            for key, c in cells.items()}


def search_all(cells: dict[tuple[str, str], MetricCells], max_m: int, options: Options = Options()) -> list[PairResult]:
    """:func:`search_pair` for every dimension, metric pair (alphabetical) and m = 1 … ``max_m``."""
    if max_m < 1:
        raise AuditError(f"--max-m must be at least 1, got {max_m}")
    if options.paraphraser is not None:
        cells = written_by(cells, options.paraphraser)
    results = []
    for dimension in sorted({d for d, _ in cells}):
        metrics = sorted(metric for d, metric in cells if d == dimension)
        for a, b in combinations(metrics, 2):
            results.extend(search_pair(cells[(dimension, a)], cells[(dimension, b)], m, options)
                           for m in range(1, max_m + 1))
    if not results:
        raise AuditError("no bias dimension has scored continuations from two metrics: nothing to correlate")
    return results


def correlation_table(results: list[PairResult]) -> pd.DataFrame:
    """One row per (dimension, metric pair, m): best, held-out, null-95th, average and original-only r, the
    permutation p-value, and the best sets."""
    return pd.DataFrame([{
        "dimension": r.dimension, "metric_a": r.metric_a, "metric_b": r.metric_b, "m": r.m, "search": r.search,
        "models": len(r.models), "combinations_a": r.combinations_a, "combinations_b": r.combinations_b,
        "best_r": r.best_r, "heldout_r": r.heldout_r, "null_95": r.null_95, "p_value": r.p_value,
        "permutations": r.permutations, "average_r": r.average_r, "original_r": r.original_r,
        "best_sets_a": list(r.sets_a), "best_sets_b": list(r.sets_b)} for r in results])


def source_table(result: PairResult) -> pd.DataFrame:
    """How many of each metric's best-combination sets each source contributed (the paper's Figure 7)."""
    rows = [{"metric": metric, "source": source, "set": name}
            for metric, sets, sources in ((result.metric_a, result.sets_a, result.sources_a),
                                          (result.metric_b, result.sets_b, result.sources_b))
            for name, source in zip(sets, sources)]
    frame = pd.DataFrame(rows, columns=["metric", "source", "set"])
    return frame.groupby(["metric", "source"], as_index=False).agg(sets=("set", "size"),
                                                                    names=("set", lambda s: ", ".join(s)))


def ranking_table(result: PairResult) -> pd.DataFrame:
    """Each model's bias per metric with and without CAIRO, normalised by the metric's largest bias (Figure 8),
    and its rank (1 = most biased)."""
    rows = []
    for metric, biases in ((result.metric_a, result.bias_a), (result.metric_b, result.bias_b)):
        for variant, index in (("original prompts", 0), (f"CAIRO (m = {result.m})", 1)):
            values = pd.Series({model: pair[index] for model, pair in biases.items()})
            top = values.abs().max()
            for model, value in values.items():
                rows.append({"metric": metric, "prompts": variant, "model": model, "bias": value,
                             "normalised_bias": value / top if top > 0 else 0.0,
                             "rank": int(values.rank(ascending=False, method="min")[model])})
    return pd.DataFrame(rows)
