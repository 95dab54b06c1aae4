"""The audit's answer: one verdict per system × grouping × category at quota k, rolled up per system, and the
store-wide count of systems per verdict (:func:`store_line`).

The rule (stated once, :data:`RULE`; the CLI, pages and report quote it). Each category c is compared with the
most-selected category of its system, grouping and k (the *comparator*, ratio 1 by construction):

* **adverse impact** — the impact ratio r = rate(c) ÷ rate(comparator) is below ``threshold`` (four-fifths by
  default) *and* the test of equal selection rates of c and the comparator rejects at α = 1 − ci after Holm's
  adjustment over **every pairwise comparison** of the categories in the chosen *family* (``grouping``: one system ×
  grouping; ``system``: every grouping of one system, the default; ``audit``: everything judged at that k). Adjusting
  over all G(G − 1)/2 pairs, not only the G − 1 comparisons with the comparator, covers the comparator's having been
  chosen from the data (a max-type correction: the largest of the pairwise statistics is what is compared). With
  ``rule="strict"`` the ratio's upper confidence bound must lie below the threshold as well.
* **no evidence of adverse impact at this sample size** — the ratio's interval lies entirely above ``threshold``
  (and the comparator itself);
* **inconclusive** — otherwise, with the planner's answer (see *planner*).

The test follows the design: recorded pools (``observed``: recorded rankings, decision logs) use the exact
conditional test stratified by pool of :mod:`audit.metrics.exact` (Fisher's exact test for one pool); the virtual
designs of scored pilots (``per-group``, ``random:N``, whose rates are exact expectations over all pools) shuffle the
candidates' labels (:mod:`audit.metrics.inference`), every pair read from the same shuffles. One interval per ratio:
the pairwise ratio against the comparator, with the pool-robust Katz log interval (recorded pools) or the percentile
bootstrap of the pair (virtual designs); its upper bound at the level 1 − (1 − ci)/(G − 1) shared over the G − 1
comparisons with the comparator, which is chosen from the data (:func:`audit.metrics.impact.ratio_level`). A category that never shares a recorded pool with its
comparator is *not comparable within pools*: no test, no interval, inconclusive, and the ``evidence`` column and
``needed_unit`` say so. The comparator is the most-selected category among those with at least 30 candidates when
any has (:func:`audit.metrics.impact.comparable`). The test decides adverse impact and the interval decides no evidence; they
can disagree (different methods, and the test is adjusted for multiplicity while the interval is not), and then the
``evidence`` column says so in one sentence.

*Planner* (inconclusive cells): the sample at which the verdict's own decision is reached with 80 % power at the
planning ratio r* = (r + threshold)/2 (the observed ratio moved halfway to the threshold: a smaller effect than
observed, on the same side of the threshold). Below the threshold that is the pairwise test at the family's
Bonferroni level α/m (m: the family's comparisons; Holm's first step, so conservative) detecting
rate(comparator)·(1 − r*); at or above it, the interval's lower bound exceeding the threshold at r*. Normal
approximation with the standard error observed now scaled by 1/√n: n = n₀·((z_crit + z_0.8)·se₀ / distance)². The
unit n is candidates per group (virtual designs, one-pool logs) or pools (recorded pools). At least one more than
now, and no figure beyond 10× the present sample (:data:`PLAN_REACH`): there the ``plan`` column says ``beyond
reach`` and ``plan_note`` why — more data of this kind will not settle the cell, the observed ratio lying too close to
the threshold for this design (or the rates too close for the adjusted test). A ratio on the threshold is never
settled (``on the threshold``: the planning ratio is the threshold itself); ``no estimate`` where the ratio or its
spread is undefined.

Columns (:data:`COLUMNS`): the system key, grouping, category, k, candidates, selection_rate, impact_ratio (against
the comparator, unrounded: a flag is decided on it), impact_ratio_lo/hi, p_adj (Holm over the family), verdict,
needed_per_group (planner: candidates per group or pools, see needed_unit; NaN unless ``plan`` is ``more data``),
more_per_group (needed − now, ≥ 1),
then **p** (raw two-sided p-value of the pair, exact for recorded pools), **comparator** (the most-selected category),
**family** and **family_size** (its pairwise comparisons), **evidence** (a sentence where test and interval
disagree, else empty), **planning_ratio** (r*), **needed_unit** (``candidates`` or ``pools``), **plan** (the
planner's answer for inconclusive cells: ``more data``, ``beyond reach``, ``on the threshold``, ``not comparable
within pools`` or ``no estimate``; empty for decided cells), **plan_note** (that answer in words), **rule**
(``practice`` or ``strict``),
**pool_adjusted_ratio** with **_lo** / **_hi** (recorded pools: Mantel–Haenszel's ratio to the comparator within the
pools the two share, :func:`audit.metrics.exact.mantel_haenszel`; where its interval leaves out the headline ratio,
the two were selected from pools of different make-up and ``evidence`` says so; the verdict reads the headline, LL144's
ratio).

A quota k must be below the pool size: at k = pool size every candidate is selected and every ratio is 1 by
construction, so no verdict is defined there.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy.special import ndtri  # norm.ppf's own kernel: imports fast, scipy.stats does not

from audit.design import PoolDesign, PoolKind
from audit.enums import DEFAULT_FAMILY, Family, Rule
from audit.errors import AuditError
from audit.formatting import ratio as ratio_text
from audit.metrics.bootstrap import share_draws
from audit.metrics.exact import informing_units_of, katz_bounds_of, mantel_haenszel_of, pair_errors_of
from audit.metrics.impact import (FOUR_FIFTHS, bootstrap_bounds, comparable, key_impact, known_categories,
                                  most_selected, ratio_level)
from audit.metrics.inference import holm_within, permutation_pvalues, permuted_shares
from audit.metrics.keys import KeyData, selection_keys
from audit.metrics.ll144 import MIN_APPLICANTS
from audit.metrics.pools import pool_size
from audit.metrics.quota import check_quota
from audit.metrics.schema import KEY
from audit.metrics.stacked import Stacked, batches, key_columns

ADVERSE = "adverse impact"
NO_EVIDENCE = "no evidence of adverse impact at this sample size"
INCONCLUSIVE = "inconclusive"
#: strongest first: the order of roll-ups
STRENGTH = (ADVERSE, INCONCLUSIVE, NO_EVIDENCE)
_SHORT = ("adverse", "inconclusive", "no_evidence")
#: the multiple-testing family → what it holds
FAMILIES = {Family.GROUPING: "the categories of one system and grouping",
            Family.SYSTEM: "every grouping and category of one system (model and subtask)",
            Family.AUDIT: "every system, grouping and category of the audit"}
_FAMILY_BY = {Family.GROUPING: (*KEY, "grouping", "k"), Family.SYSTEM: (*KEY, "k"), Family.AUDIT: ("k",)}
#: the reading of "adverse impact" → in words
RULES = {Rule.PRACTICE: "four-fifths plus significance: ratio below the threshold and the adjusted test rejects",
         Rule.STRICT: "as practice, and the ratio's upper confidence bound lies below the threshold"}
PLANNED_POWER = 0.8
#: the planner's unit of a category that never shares a recorded pool with its comparator
NOT_COMPARABLE = "not comparable within pools"
#: the planner gives a figure up to this multiple of the present sample, beyond it none
PLAN_REACH = 10
#: the planner's answer for an inconclusive cell (column ``plan``; empty for decided cells)
MORE_DATA = "more data"
BEYOND_REACH = "beyond reach"
ON_THRESHOLD = "on the threshold"
NO_ESTIMATE = "no estimate"
RULE = ("Adverse impact: impact ratio (against the most-selected category) below {threshold:g}{strict} and the exact "
        "test of equal selection rates (stratified by pool for recorded pools; label shuffles for scored pilots) "
        "rejects at α = {alpha:g} after Holm's adjustment over every pairwise comparison of categories within "
        "{family_words} (family '{family}'; all pairs, so choosing the most-selected category from the data is "
        "covered). No evidence of adverse impact at this sample size: the ratio's {level:.0%} interval lies above "
        "{threshold:g} (its upper bound shared over the category's comparisons with the comparator, which is chosen "
        "from the data). The test decides adverse impact and the interval decides no evidence; they can disagree "
        "(different methods; the test is adjusted for multiplicity, the interval is not), and the cell then says "
        "so. Otherwise inconclusive, with the sample at which the verdict's own decision has 80% power at the "
        "planning ratio halfway between the observed ratio and {threshold:g}, given up to {reach}× the present "
        "sample; beyond that, or for a ratio on {threshold:g}, more data of this kind will not settle it, and the cell "
        "says why.")
COLUMNS = (*KEY, "grouping", "category", "k", "candidates", "selection_rate", "impact_ratio", "impact_ratio_lo",
           "impact_ratio_hi", "p_adj", "verdict", "needed_per_group", "more_per_group", "p", "comparator", "family",
           "family_size", "evidence", "planning_ratio", "needed_unit", "plan", "plan_note", "rule",
           "pool_adjusted_ratio", "pool_adjusted_ratio_lo", "pool_adjusted_ratio_hi")
PAIR_COLUMNS = (*KEY, "grouping", "k", "a", "b", "p")


def rule_text(threshold: float = FOUR_FIFTHS, ci: float = 0.95, family: Family = DEFAULT_FAMILY,
              rule: Rule = Rule.PRACTICE) -> str:
    """The verdict rule in words, with this audit's threshold, confidence level, family and reading."""
    _check_choice(family, FAMILIES, "family"), _check_choice(rule, RULES, "rule")
    strict = " with its upper confidence bound below it too (strict reading)" if rule == Rule.STRICT else ""
    return RULE.format(threshold=threshold, alpha=round(1 - ci, 6), level=ci, family=family,
                       family_words=FAMILIES[family], strict=strict, reach=PLAN_REACH)


def _check_choice(value: str, choices: dict, what: str) -> None:
    if value not in choices:
        raise AuditError(f"{what} {value!r} not known; use {', '.join(choices)}")


def classify(ratio: float, ratio_lo: float, p_adj: float, *, threshold: float = FOUR_FIFTHS,
             alpha: float = 0.05, ratio_hi: float = math.nan, rule: Rule = Rule.PRACTICE) -> str:
    """The verdict of one category (see the module's rule); NaN p-values (the comparator) never reject, and the
    strict reading needs ``ratio_hi`` below the threshold."""
    if (ratio < threshold and np.isfinite(p_adj) and p_adj <= alpha
            and (rule == Rule.PRACTICE or ratio_hi < threshold)):
        return ADVERSE
    if np.isfinite(ratio_lo) and ratio_lo > threshold:
        return NO_EVIDENCE
    return INCONCLUSIVE


def check_k(scores: pd.DataFrame, k: int, pool: "str | PoolDesign", grouping: str) -> int:
    """The smallest pool size of ``scores`` (groups: the categories of ``grouping``); an AuditError naming it when
    k is not in 1 … pool size − 1."""
    design = PoolDesign.parse(pool)
    return _check_quotas(selection_keys(scores), [k], design, grouping)[1]


def _check_quotas(keys: list[KeyData], ks: "int | Iterable[int]", design: PoolDesign, grouping: str
                  ) -> tuple[list[int], int]:
    """(the quotas sorted, the smallest pool size); an AuditError naming the size for a k not in 1 … size − 1."""
    quotas = sorted({int(k) for k in ([ks] if isinstance(ks, (int, np.integer)) else ks)})
    size = min(pool_size(design, data) for data in keys)
    for k in quotas:
        check_quota(k, size, f"the {grouping} grouping")
    if not quotas:
        raise AuditError("no quota k given")
    return quotas, size


def verdicts(scores: pd.DataFrame, *, grouping: str, k: "int | Iterable[int]", pool: "str | PoolDesign" = "per-group",
             threshold: float = FOUR_FIFTHS, ci: float = 0.95, n_boot: int = 1000, n_perm: int = 1000,
             plan_boot: int = 100, seed: int = 0, family: Family = DEFAULT_FAMILY,
             rule: Rule = Rule.PRACTICE) -> pd.DataFrame:
    """One row per system (model, task, subtask, mode) × category × quota in ``k`` (columns :data:`COLUMNS`) of
    pointwise ``scores`` whose groups are already the categories of ``grouping`` (see
    :meth:`audit.design.AuditDesign.category`): :func:`measure` then :func:`decide`. ``plan_boot`` is accepted for
    callers of the bootstrap planner this replaced and has no effect (the planner is analytic)."""
    del plan_boot
    rows, pairs = measure(scores, grouping=grouping, k=k, pool=pool, ci=ci, n_boot=n_boot, n_perm=n_perm, seed=seed)
    return decide(rows, pairs, family=family, threshold=threshold, ci=ci, rule=rule)


def measure(scores: pd.DataFrame, *, grouping: str, k: "int | Iterable[int]", pool: "str | PoolDesign" = "per-group",
            ci: float = 0.95, n_boot: int = 1000, n_perm: int = 1000, seed: int = 0,
            keys: list[KeyData] | None = None, excluded: Iterable[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, pairs): per system × category × quota the selection rate, pairwise ratio against the comparator with
    its interval, the pair's raw p-value and what the planner needs; per system × quota × pair of known categories
    (``a`` < ``b``) the raw p-value (columns :data:`PAIR_COLUMNS`), for :func:`decide`'s family adjustment.

    The shuffles (virtual designs) and bootstrap draws of a system are made once and serve every k and pair.
    ``keys``: ``scores`` already split (:func:`audit.metrics.keys.split_keys`), when the caller holds them;
    ``excluded``: categories left out of the ratios and tests (as the unknown category is), e.g. LL144's categories
    under 2 % when the auditor justifies it."""
    if not 0 < ci < 1:
        raise AuditError(f"confidence level {ci} must lie strictly between 0 and 1")
    if scores.empty:
        raise AuditError("no pointwise scores to judge")
    if n_perm < 1 or n_boot < 2:
        raise AuditError(f"permutations {n_perm} and bootstrap replicates {n_boot} must be at least 1 and 2")
    design = PoolDesign.parse(pool)
    keys = keys if keys is not None else selection_keys(scores)
    quotas = _check_quotas(keys, k, design, grouping)[0]
    if design.kind == PoolKind.OBSERVED:
        return _recorded(keys, quotas, grouping=grouping, ci=ci, excluded=tuple(excluded))
    parts = [_measured(data, design, quotas, grouping=grouping, ci=ci, n_boot=n_boot, n_perm=n_perm, seed=seed,
                       excluded=tuple(excluded)) for data in keys]
    return (pd.concat([rows for rows, _ in parts], ignore_index=True),
            pd.concat([pairs for _, pairs in parts], ignore_index=True))


def _measured(data: KeyData, design: PoolDesign, quotas: list[int], *, grouping: str, ci: float, n_boot: int,
              n_perm: int, seed: int, excluded: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure` for one system of a virtual design: its rows (category by category, each at every quota) and
    its pairs."""
    part = key_impact(data, design, quotas, grouping=grouping, ci=None, n_boot=n_boot, seed=seed)
    rate = part["selection_rate"].to_numpy().reshape(len(data.groups), len(quotas))
    compared = _compared(data.groups, excluded)
    known = np.flatnonzero(compared)
    top = most_selected(rate, comparable(data, compared))  # the comparator, per k
    a, b = (known[i] for i in np.triu_indices(known.size, 1))
    upper = ratio_level(ci, known.size)
    pair_p, bounds, errors, units = _virtual(data, design, quotas, rate, top, a, b, ci, upper, n_boot=n_boot,
                                             n_perm=n_perm, seed=seed)
    adjusted = np.full((3, *rate.shape), np.nan)  # the pool-adjusted ratio: recorded pools only
    rows, pairs = _frames((data,), quotas, grouping, rate[None], top[None], compared, a, b, pair_p[None],
                          bounds[:, None], errors[:, None], (units[0][None], units[1][None]), adjusted[:, None],
                          part["candidates"].to_numpy()[::len(quotas)][None])
    return rows, pairs


def _compared(groups: tuple[str, ...], excluded: tuple[str, ...]) -> np.ndarray:
    """The categories whose ratios and tests are made: the known ones not ``excluded``."""
    return known_categories(groups) & ~np.isin(np.asarray(groups, dtype=object), excluded)


def _frames(keys: tuple[KeyData, ...], quotas: list[int], grouping: str, rate: np.ndarray, top: np.ndarray,
            compared: np.ndarray, a: np.ndarray, b: np.ndarray, pair_p: np.ndarray, bounds: np.ndarray,
            errors: np.ndarray, units: tuple[np.ndarray, np.ndarray], adjusted: np.ndarray,
            candidates: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, pairs) of :func:`measure` for ``keys`` sharing their categories: each key's categories, each at every
    quota, from arrays (keys, groups, quotas) (``bounds``, ``errors``, ``adjusted`` with a leading axis; ``top``
    keys × quotas; ``pair_p`` keys × pairs × quotas; ``candidates`` keys × groups)."""
    count, groups, width = rate.shape
    names = np.asarray(keys[0].groups, dtype=object)
    at = np.arange(count)[:, None], np.arange(width)[None]
    index = np.full((groups, groups), -1)
    index[a, b] = index[b, a] = np.arange(a.size)
    at_top = index[:, top].transpose(1, 0, 2)  # (keys, groups, quotas): each category's pair with the comparator
    p = (np.where(at_top >= 0, pair_p[at[0][:, None], np.maximum(at_top, 0), at[1][:, None]], np.nan) if a.size
         else np.full(rate.shape, np.nan))
    comparator_rate = rate[at[0], top, at[1]][:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(compared[None, :, None], rate / comparator_rate, np.nan)
    columns = {**key_columns(keys, KEY, groups * width), "grouping": grouping,
               "category": np.tile(np.repeat(np.asarray(keys[0].groups), width), count),
               "k": np.tile(quotas, groups * count), "candidates": np.repeat(candidates.ravel(), width),
               "selection_rate": rate, "impact_ratio": ratio, "impact_ratio_lo": bounds[0],
               "impact_ratio_hi": bounds[1], "p": p, "se_diff": errors[0], "se_log": errors[1], "units": units[0],
               "unit": units[1], "comparator": np.broadcast_to(names[top][:, None], rate.shape),
               "comparator_rate": np.broadcast_to(comparator_rate, rate.shape), "pool_adjusted_ratio": adjusted[0],
               "pool_adjusted_ratio_lo": adjusted[1], "pool_adjusted_ratio_hi": adjusted[2]}
    rows = pd.DataFrame({name: np.asarray(values).ravel() if np.ndim(values) else values
                         for name, values in columns.items()})
    pairs = pd.DataFrame({**key_columns(keys, KEY, a.size * width), "grouping": grouping,
                          "k": np.tile(quotas, a.size * count), "a": np.tile(np.repeat(names[a], width), count),
                          "b": np.tile(np.repeat(names[b], width), count), "p": pair_p.ravel()})
    return rows, pairs[list(PAIR_COLUMNS)]


def _recorded(keys: list[KeyData], quotas: list[int], *, grouping: str, ci: float,
              excluded: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure` of recorded pools, every system at once (batches of systems sharing their categories and
    pool size; :mod:`audit.metrics.stacked`): rates, exact stratified p-values of every pair, and against the
    comparator the Katz bounds with the pool-robust error, the errors (se of the difference, of the log ratio), the
    units and the Mantel–Haenszel ratio with its interval."""
    design = PoolDesign(PoolKind.OBSERVED)
    parts, order = [], []
    for batch in batches(keys, [pool_size(design, data) for data in keys]):
        parts.append(_recorded_batch(Stacked.of([keys[i] for i in batch]), quotas, grouping=grouping, ci=ci,
                                     excluded=excluded))
        order.append(np.asarray(batch))
    rows, pairs = (pd.concat([part[i] for part in parts], ignore_index=True) for i in (0, 1))
    if len(parts) == 1:
        return rows, pairs
    position = np.concatenate(order)  # back to the keys' order
    each = [len(part[0]) // len(batch) for part, batch in zip(parts, order)]
    rows = rows.iloc[np.argsort(np.repeat(position, np.repeat(each, [len(b) for b in order])), kind="stable")]
    each = [len(part[1]) // len(batch) for part, batch in zip(parts, order)]
    pairs = pairs.iloc[np.argsort(np.repeat(position, np.repeat(each, [len(b) for b in order])), kind="stable")]
    return rows.reset_index(drop=True), pairs.reset_index(drop=True)


def _recorded_batch(stack: Stacked, quotas: list[int], *, grouping: str, ci: float,
                    excluded: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`_recorded` of one batch of systems."""
    count, groups = len(stack.keys), stack.groups
    rate = stack.rates(quotas)
    compared = _compared(stack.keys[0].groups, excluded)
    known = np.flatnonzero(compared)
    enough = compared & (stack.candidates >= MIN_APPLICANTS)
    choice = np.where(enough.any(axis=1, keepdims=True), enough, compared)  # comparable(): per key
    top = np.where(choice[:, :, None], rate, -np.inf).argmax(axis=1)  # (keys, quotas): the comparator
    a, b = (known[i] for i in np.triu_indices(known.size, 1))
    upper = ratio_level(ci, known.size)
    shape = rate.shape
    pair_p = np.empty((count, a.size, len(quotas)))
    errors, bounds, adjusted = np.full((2, *shape), np.nan), np.full((2, *shape), np.nan), np.full((3, *shape), np.nan)
    units, unit = np.zeros(shape), np.full(shape, "", dtype=object)
    keys_at = np.arange(count)
    moved = stack.moved(quotas)
    for j, k in enumerate(quotas):
        if not moved[j]:  # the same decisions as at the quota before (e.g. a 0/1 log's at every k): the same numbers
            for values in (pair_p, errors, bounds, adjusted, units, unit):
                values[..., j] = values[..., j - 1]
            continue
        counts = stack.counts(k)
        for i, (first, second) in enumerate(zip(a.tolist(), b.tolist())):
            pair_p[:, i, j] = stack.pair_pvalues(counts, first, second)
        against = stack.against(counts, top[:, j])
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = rate[:, :, j] / rate[keys_at, top[:, j], j][:, None]
        judged = (np.arange(groups)[None] != top[:, j][:, None]) & np.isfinite(rate[:, :, j])
        shared = against.pools((against.n_a > 0) & (against.n_b > 0)).reshape(groups, count).T > 0
        apart = judged & ~shared
        units[apart, j], unit[apart, j] = np.nan, NOT_COMPARABLE
        fine = judged & shared
        found = mantel_haenszel_of(against, ci).reshape(3, groups, count).transpose(0, 2, 1)
        adjusted[:, fine, j] = found[:, fine]
        se = np.stack(pair_errors_of(against)).reshape(2, groups, count).transpose(0, 2, 1)
        errors[:, fine, j] = se[:, fine]
        bounds[:, fine, j] = katz_bounds_of(ratio[fine], se[1][fine], ci, upper)
        found_units, found_unit = (values.reshape(groups, count).T for values in informing_units_of(against))
        units[fine, j], unit[fine, j] = found_units[fine], found_unit[fine]
    return _frames(stack.keys, quotas, grouping, rate, top, compared, a, b, pair_p, bounds, errors, (units, unit),
                   adjusted, stack.candidates)


def _virtual(data: KeyData, design: PoolDesign, quotas: list[int], rate: np.ndarray, top: np.ndarray,
             a: np.ndarray, b: np.ndarray, ci: float, upper: float, *, n_boot: int, n_perm: int, seed: int) -> tuple:
    """Virtual designs: permutation p-values of every pair from one set of label shuffles; the percentile bootstrap
    interval of each category's ratio to the comparator (the pair's own draws), the draws' standard errors, and
    the pair's smaller count of candidates as its units."""
    at = np.asarray(quotas) - 1
    columns = np.arange(len(quotas))
    null = permuted_shares(data, design, n_perm=n_perm, seed=seed)[0][:, :, at]
    pair_p = permutation_pvalues({"d": rate[a] - rate[b]}, {"d": null[:, a] - null[:, b]})["d_p"]
    draws = share_draws(data, design, n_boot=n_boot, seed=seed)[0][:, :, at]
    reference = draws[:, top, columns][:, None]
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the comparator's own (constant) draws
        ratios = draws / reference
        logs = np.where(ratios > 0, np.log(ratios), np.nan)
        errors = np.stack([np.std(draws - reference, axis=0, ddof=1), np.nanstd(logs, axis=0, ddof=1)])
    bounds = bootstrap_bounds(draws, top, ci, upper)  # the impact table's interval too: one interval per ratio
    candidates = np.bincount(data.group, minlength=len(data.groups)).astype(float)
    units = np.minimum(candidates[:, None], candidates[top][None])
    errors[:, top, columns] = np.nan
    return pair_p, bounds, errors, (units, np.full(units.shape, "candidates", dtype=object))


def decide(rows: pd.DataFrame, pairs: pd.DataFrame, *, family: Family = DEFAULT_FAMILY, threshold: float = FOUR_FIFTHS,
           ci: float = 0.95, rule: Rule = Rule.PRACTICE) -> pd.DataFrame:
    """The verdict rows (:data:`COLUMNS`) of :func:`measure`'s rows and pairs (several groupings' may be
    concatenated): Holm over every pair of the chosen ``family``, the verdict, the ``evidence`` sentence and the
    planner's answer for inconclusive cells."""
    if not 0 < threshold <= 1:
        raise AuditError(f"threshold {threshold} must lie in (0, 1]")
    _check_choice(family, FAMILIES, "family"), _check_choice(rule, RULES, "rule")
    adjusted = _family_adjusted(pairs, family)
    first = np.where(rows["category"].astype(str) < rows["comparator"].astype(str), rows["category"], rows["comparator"])
    last = np.where(first == rows["category"], rows["comparator"], rows["category"])
    out = rows.assign(a=first, b=last).merge(adjusted, on=[*KEY, "grouping", "k", "a", "b"], how="left",
                                             validate="many_to_one")
    sizes = adjusted.groupby(list(_FAMILY_BY[family]), observed=True)["family_size"].first()
    out["family_size"] = out.set_index(list(_FAMILY_BY[family])).index.map(sizes).to_numpy()
    alpha = 1 - ci
    is_top = (out["category"] == out["comparator"]).to_numpy()
    out["verdict"] = [NO_EVIDENCE if top else classify(r, lo, q, threshold=threshold, alpha=alpha, ratio_hi=hi,
                                                        rule=rule)
                      for top, r, lo, hi, q in zip(is_top, out["impact_ratio"], out["impact_ratio_lo"],
                                                   out["impact_ratio_hi"], out["p_adj"])]
    read = out[list(_EVIDENCE_READS)]  # the columns the sentences read: the text ones iterate slowly
    out["evidence"] = [_evidence(row, threshold, alpha, top) for row, top in zip(read.itertuples(), is_top)]
    out["family"], out["rule"] = str(family), str(rule)
    out = out.join(_planned(out, threshold=threshold, ci=ci, rule=rule))
    return out[list(COLUMNS)]


def _family_adjusted(pairs: pd.DataFrame, family: Family) -> pd.DataFrame:
    """``pairs`` with ``p_adj`` (Holm over every pair of its family) and ``family_size`` (the family's pairs)."""
    at = pairs.groupby(list(_FAMILY_BY[family]), sort=False, observed=True).ngroup().to_numpy()
    p_adj, size = holm_within(pairs["p"].to_numpy(dtype=float), at)
    return pairs.assign(p_adj=p_adj, family_size=size).drop(columns="p")


#: what :func:`_evidence` reads of a verdict row
_EVIDENCE_READS = ("unit", "comparator", "impact_ratio", "impact_ratio_lo", "impact_ratio_hi", "p_adj", "family_size",
                   "pool_adjusted_ratio", "pool_adjusted_ratio_lo", "pool_adjusted_ratio_hi")


def _evidence(row, threshold: float, alpha: float, top: bool) -> str:
    """One sentence where the ratio's interval and the adjusted test point different ways, or the category never
    shares a pool with the comparator (empty otherwise)."""
    if top:
        return "the comparator (most-selected category): ratio 1 by construction"
    if row.unit == NOT_COMPARABLE:
        return (f"never in a pool with {row.comparator}: the two were selected in different pools, so their rates "
                "are not comparable within pools (no test, no interval, no sample size to plan)")
    sentence = _decided_apart(row, threshold, alpha)
    adjusted = _pool_make_up(row)
    return f"{sentence}; {adjusted}" if sentence and adjusted else sentence or adjusted


def _pool_make_up(row) -> str:
    """A sentence where the pool-adjusted ratio's interval leaves out the headline ratio (empty otherwise)."""
    if not (row.pool_adjusted_ratio_lo <= row.impact_ratio <= row.pool_adjusted_ratio_hi):
        if np.isfinite(row.pool_adjusted_ratio):
            return (f"within the pools they share, the ratio is {row.pool_adjusted_ratio:.3g} "
                    f"[{row.pool_adjusted_ratio_lo:.3g}, {row.pool_adjusted_ratio_hi:.3g}] (Mantel–Haenszel), "
                    f"apart from the headline {row.impact_ratio:.3g}: the two categories were selected from pools of "
                    "different make-up")
    return ""


def _decided_apart(row, threshold: float, alpha: float) -> str:
    """A sentence where the ratio's interval and the adjusted test point different ways (empty otherwise)."""
    below, rejects = row.impact_ratio_hi < threshold, row.p_adj <= alpha
    if below and not rejects:
        return (f"the ratio's interval lies below {threshold:g}, but the test adjusted over the family's "
                f"{row.family_size} comparisons does not reject (p_adj {row.p_adj:.3g}): the test decides adverse "
                "impact, so this stays inconclusive")
    if rejects and row.impact_ratio < threshold and row.impact_ratio_hi >= threshold:
        return (f"the adjusted test rejects equal rates, but the ratio's interval reaches {threshold:g}: the true "
                "ratio may lie at or above the threshold")
    if rejects and row.impact_ratio_lo > threshold:
        return (f"the rates differ significantly, but the ratio's interval lies above {threshold:g}: a difference "
                "within the threshold, so no evidence of adverse impact (the interval decides)")
    return ""


def planned_units(units: np.ndarray, se: np.ndarray, distance: np.ndarray, z_crit: np.ndarray,
                  power: float = PLANNED_POWER) -> np.ndarray:
    """n = n₀·((z_crit + z_power)·se₀ / distance)²: the sample at which an estimate with standard error se₀ at n₀
    (shrinking as 1/√n) lies ``distance`` from its decision boundary with z_crit to spare at ``power`` (normal
    approximation)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return units * ((z_crit + ndtri(power)) * se / distance) ** 2


def _planned(rows: pd.DataFrame, *, threshold: float, ci: float, rule: Rule) -> pd.DataFrame:
    """``needed_per_group``, ``more_per_group``, ``planning_ratio``, ``needed_unit``, ``plan`` and ``plan_note`` of
    the inconclusive rows (see the module's planner): a figure only within :data:`PLAN_REACH` × the present sample,
    else the reason there is none; NaN and empty elsewhere."""
    ratio = rows["impact_ratio"].to_numpy(dtype=float)
    units = rows["units"].to_numpy(dtype=float)
    inconclusive = (rows["verdict"] == INCONCLUSIVE).to_numpy()
    todo = inconclusive & np.isfinite(ratio)
    plan = np.where(todo, (np.minimum(ratio, 1) + threshold) / 2, np.nan)
    z_test = ndtri(1 - (1 - ci) / (2 * np.maximum(rows["family_size"].to_numpy(dtype=float), 1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        test = planned_units(units, rows["se_diff"].to_numpy(), rows["comparator_rate"].to_numpy() * (1 - plan),
                             z_test)
        interval = planned_units(units, rows["se_log"].to_numpy(), np.abs(np.log(plan) - np.log(threshold)),
                                 ndtri((1 + ci) / 2))
    below = ratio < threshold
    needed = np.where(below, np.fmax(test, interval) if rule == Rule.STRICT else test, interval)
    by_interval = needed == interval  # the figure waits for the interval (else for the test)
    needed = np.where(todo & np.isfinite(needed) & (needed > 0), np.fmax(np.ceil(needed), units + 1), np.nan)
    status = np.select([~inconclusive, (rows["unit"] == NOT_COMPARABLE).to_numpy(), ~todo,
                        np.isclose(ratio, threshold, rtol=0, atol=1e-9),
                        needed > PLAN_REACH * units, np.isfinite(needed)],
                       ["", NOT_COMPARABLE, NO_ESTIMATE, ON_THRESHOLD, BEYOND_REACH, MORE_DATA], NO_ESTIMATE)
    needed = np.where(status == MORE_DATA, needed, np.nan)
    notes = [_plan_note(*values, threshold=threshold) for values in
             zip(status, ratio, needed - units, units, rows["unit"], by_interval)]
    return pd.DataFrame({"needed_per_group": needed, "more_per_group": needed - units, "planning_ratio": plan,
                         "needed_unit": np.where(np.isfinite(needed), rows["unit"], ""), "plan": status,
                         "plan_note": notes}, index=rows.index)


def _plan_note(status: str, ratio: float, more: float, units: float, unit: str, by_interval: bool, *,
               threshold: float) -> str:
    """The planner's answer for one cell in words (empty where it plans nothing)."""
    unit = "pools" if unit == "pools" else "candidates per group"
    if status == MORE_DATA:
        return f"about {int(more):,} more {unit} needed"
    if status == NOT_COMPARABLE:
        return ("not settled by more data of this kind: the category never shares a pool with the most-selected "
                "one, so their rates are not comparable within pools")
    if status == ON_THRESHOLD:
        return (f"not settled by more data: the ratio sits on the threshold {threshold:g}, and no sample size "
                "separates them")
    if status == BEYOND_REACH:
        shown = ratio_text(ratio, threshold=threshold)
        why = (f"the ratio {shown} lies within {abs(ratio - threshold):.2g} of the threshold {threshold:g}, and its "
               "interval would clear it" if by_interval else
               f"the ratio {shown} lies below {threshold:g}, but the adjusted test would tell the two rates apart")
        return (f"not settled by more data of this kind: {why} only with over {PLAN_REACH}× the present "
                f"{int(units):,} {unit}")
    if status == NO_ESTIMATE:
        return ("no impact ratio: not compared with the most-selected category" if not np.isfinite(ratio) else
                "no planner figure: the ratio's spread cannot be estimated from this sample")
    return ""


def rollup(table: pd.DataFrame, by: list[str] | tuple[str, ...] = KEY) -> pd.DataFrame:
    """The strongest verdict of each ``by`` group (adverse > inconclusive > no evidence), with counts of each and
    the categories that carry it (``race × gender: Asian men, Black men; race: Black``); rows sorted strongest
    first. ``by=[]`` rolls the whole audit into one row (a
    store-wide verdict only means something under the ``audit`` family: see :func:`store_line`)."""
    rank = {name: i for i, name in enumerate(STRENGTH)}
    counted = [f"n_{short}" for short in _SHORT]
    keyed = table.assign(_rank=table["verdict"].map(rank).to_numpy(), _all=0,
                         **{column: (table["verdict"] == name).to_numpy(int) for column, name in zip(counted, STRENGTH)})
    columns = list(by) or ["_all"]
    grouped = keyed.groupby(columns, sort=False, observed=True)
    out = grouped[counted].sum()
    out["_rank"] = grouped["_rank"].min()
    carriers = keyed[keyed["_rank"] == grouped["_rank"].transform("min")]
    keys = [carriers[c] for c in columns]
    names = carriers.get("name", carriers["category"]).astype(str)
    per_grouping = names.groupby([*keys, carriers["grouping"].astype(str)], sort=False, observed=True).agg(", ".join)
    listed = per_grouping.index.get_level_values(-1) + ": " + per_grouping.to_numpy()
    out["categories"] = pd.Series(listed, index=per_grouping.index.droplevel(-1)).groupby(
        level=list(range(len(keys))), sort=False).agg("; ".join)
    out["verdict"] = [STRENGTH[r] for r in out["_rank"]]
    out = out.reset_index()[[*columns, "verdict", *counted, "categories", "_rank"]]
    out = out.sort_values("_rank", kind="stable").drop(columns="_rank")
    return out.drop(columns=["_all"], errors="ignore").reset_index(drop=True)


def store_line(table: pd.DataFrame) -> dict[str, object]:
    """The store-wide line of a verdict table (one k): ``systems`` (model × subtask, each at its strongest verdict)
    and ``systems_adverse`` / ``systems_inconclusive`` / ``systems_no_evidence``, how many have each verdict; the
    ``family``; ``summary``, all of it in one sentence. Only under the ``audit`` family, the one adjusted across
    systems, also a store-wide ``verdict`` with the ``categories`` that carry it: under the others each system is
    tested at its own α, so a few adverse cells among many systems say nothing of the store as a whole."""
    systems = rollup(table)
    counts = {f"systems_{short}": int((systems["verdict"] == name).sum()) for short, name in zip(_SHORT, STRENGTH)}
    family = str(table["family"].iloc[0])
    line: dict[str, object] = {"family": family, "systems": len(systems), **counts}
    counted = _system_counts(counts)
    if family == Family.AUDIT:
        whole = rollup(table, by=[]).iloc[0]
        line.update(verdict=whole["verdict"], categories=whole["categories"],
                    summary=f"{whole['verdict']} (family audit, adjusted across every system): {counted}")
    else:
        line["summary"] = (f"{counted}; no store-wide verdict: each system is judged at its own α (family {family}; "
                           "only family audit adjusts across systems)")
    return line


def _system_counts(counts: dict[str, int]) -> str:
    """``2 systems adverse impact, 5 inconclusive, 24 no evidence of adverse impact``."""
    adverse, inconclusive, no_evidence = (counts[f"systems_{short}"] for short in _SHORT)
    return (f"{adverse} system{'s' if adverse != 1 else ''} {ADVERSE}, {inconclusive} {INCONCLUSIVE}, "
            f"{no_evidence} no evidence of adverse impact")
