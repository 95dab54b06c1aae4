"""Findings in plain sentences, generated from the metric and impact tables, each with its confidence interval.

A finding's ``p_value`` is optional: when a permutation test with multiplicity adjustment fills it (the gap's
adjusted p), the sentence ends with "adjusted p = …"; without it the sentence quotes the interval only.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

MAX_FINDINGS = 12
#: metric-table column of a gap's Holm-adjusted permutation p-value (audit.metrics.inference); quoted when present
P_COLUMN = "dp_gap_padj"


#: a group code (in the report's grouping) → its name in words (:meth:`audit.design.AuditDesign.display_name`)
Namer = Callable[[str], str]


@dataclass(frozen=True)
class Finding:
    """One quoted number: ``value`` and its interval in the sentence's own direction (points or ratio)."""

    kind: str  # "gap" (ΔDP in points) or "impact" (impact ratio)
    model: str
    subtask: str
    group: str
    k: int
    value: float
    low: float
    high: float
    size: float  # what orders the findings
    sentence: str
    p_value: float | None = None  # adjusted p of a permutation test, when one was run

    @property
    def text(self) -> str:
        p = f"; adjusted p = {self.p_value:.3g}" if self.p_value is not None else ""
        return self.sentence.replace("{p}", p)


def gap_findings(at_k: pd.DataFrame, *, reference: str, ci: float, name: Namer = str) -> list[Finding]:
    """One finding per ΔDP whose interval excludes 0, in points of selection rate, largest first."""
    rows = at_k[(at_k["dp_gap_lo"] > 0) | (at_k["dp_gap_hi"] < 0)]
    out = []
    for row in rows.itertuples(index=False):
        sign = 1 if row.dp_gap > 0 else -1
        value, low, high = (round(sign * v * 100, 1) for v in (row.dp_gap, row.dp_gap_lo, row.dp_gap_hi))
        low, high = min(low, high), max(low, high)
        direction = "more" if sign > 0 else "less"
        sentence = (f"At k = {row.k}, {name(row.group)} are selected {value:.1f} points {direction} "
                    f"often than {name(reference)} by {row.model} for {row.subtask} "
                    f"({round(ci * 100)} % CI {low:.1f} to {high:.1f}{{p}}).")
        p_value = getattr(row, P_COLUMN, None)
        out.append(Finding("gap", row.model, row.subtask, row.group, int(row.k), value, low, high, abs(row.dp_gap),
                           sentence, None if p_value is None or pd.isna(p_value) else float(p_value)))
    return out


def impact_findings(impact: pd.DataFrame, *, ci: float, name: Namer = str) -> list[Finding]:
    """One finding per category whose impact ratio falls below four fifths, lowest ratio first."""
    out = []
    for row in impact[impact["four_fifths"]].itertuples(index=False):
        value, low, high = (round(v, 2) for v in (row.impact_ratio, row.impact_ratio_lo, row.impact_ratio_hi))
        sentence = (f"At k = {row.k}, {name(row.category)} ({row.grouping}) have an impact ratio of "
                    f"{value:.2f} with {row.model} for {row.subtask}, below the four-fifths threshold "
                    f"({round(ci * 100)} % CI {low:.2f} to {high:.2f}{{p}}).")
        out.append(Finding("impact", row.model, row.subtask, row.category, int(row.k), value, low, high,
                           1 - row.impact_ratio, sentence))
    return out


def findings(at_k: pd.DataFrame, impact: pd.DataFrame, *, reference: str, ci: float,
             name: Namer = str) -> list[Finding]:
    """The report's findings: the largest clear gaps, then the four-fifths flags, each list ordered by size and
    capped at :data:`MAX_FINDINGS`."""
    gaps = sorted(gap_findings(at_k, reference=reference, ci=ci, name=name), key=lambda f: -f.size)
    flags = sorted(impact_findings(impact, ci=ci, name=name), key=lambda f: -f.size)
    return gaps[:MAX_FINDINGS] + flags[:MAX_FINDINGS]
