"""Findings in plain sentences, each significant by the report's one rule (:mod:`audit.engine.verdict`): a gap
is listed only when its p-value (the exact test stratified by pool for recorded pools, else a permutation test; each
finding names its test), adjusted across the groups × subtasks of its system, is at most
α = 1 − ci; an impact ratio only when its verdict is *adverse impact* (below the threshold and the Holm-adjusted test
rejects). Every finding is listed (the report shows a compact table when there are many); everything else is
inconclusive at this sample size and is counted, not listed."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from audit.formatting import at_quota, pvalue, ratio, subtask_name
from audit.engine.verdict import ADVERSE

#: above this many findings of one kind, the report lists them as a compact table instead of sentences
SENTENCES_UP_TO = 6
#: metric-table column of a gap's adjusted permutation p-value (audit.metrics.inference)
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
    p_value: float  # the adjusted p that makes it a finding
    grouping: str = ""
    name: str = ""  # the group's display name
    test: str = ""  # the test behind a gap's p-value (:func:`audit.metrics.inference.gap_test`)

    @property
    def text(self) -> str:
        test = f", {self.test}" if self.test else ""
        return self.sentence.replace("{p}", f"; adjusted p = {pvalue(self.p_value)}{test}")


def significant(at_k: pd.DataFrame, alpha: float) -> pd.Series:
    """Which metric rows' ΔDP the adjusted test rejects at ``alpha`` (none without p-values)."""
    if P_COLUMN not in at_k:
        return pd.Series(False, index=at_k.index)
    return at_k[P_COLUMN].notna() & (at_k[P_COLUMN] <= alpha)


def gap_findings(at_k: pd.DataFrame, *, reference: str, ci: float, name: Namer = str,
                 test: str = "permutation test", quota_free: bool = False) -> list[Finding]:
    """One finding per ΔDP the adjusted ``test`` rejects at α = 1 − ci, in points of selection rate (``quota_free``:
    read on the recorded decisions, see :func:`audit.formatting.at_quota`)."""
    rows = at_k[significant(at_k, round(1 - ci, 6))]
    out = []
    for row in rows.itertuples(index=False):
        sign = 1 if row.dp_gap > 0 else -1
        value, low, high = (round(sign * v * 100, 1) for v in (row.dp_gap, row.dp_gap_lo, row.dp_gap_hi))
        low, high = min(low, high), max(low, high)
        direction = "more" if sign > 0 else "less"
        sentence = (f"{at_quota(row.k, quota_free).capitalize()}, {name(row.group)} are selected {value:.1f} points "
                    f"{direction} "
                    f"often than {name(reference)} by {row.model} for {subtask_name(row.subtask)} "
                    f"({round(ci * 100)} % CI {low:.1f} to {high:.1f}{{p}}).")
        out.append(Finding("gap", row.model, row.subtask, row.group, int(row.k), value, low, high, abs(row.dp_gap),
                           sentence, float(getattr(row, P_COLUMN)), name=name(row.group), test=test))
    return out


def impact_findings(verdicts: pd.DataFrame | None, *, ci: float, threshold: float,
                    quota_free: bool = False) -> list[Finding]:
    """One finding per category whose verdict is adverse impact (verdict rows carry the display ``name``)."""
    if verdicts is None:
        return []
    out = []
    for row in verdicts[verdicts["verdict"] == ADVERSE].itertuples(index=False):
        value, low, high = row.impact_ratio, row.impact_ratio_lo, row.impact_ratio_hi
        shown = ratio(value, low, high, threshold)  # "0.796 [0.702, 0.899]": never a side of the threshold it is not
        estimate_text, bounds = shown.split(" ", 1) if " " in shown else (shown, "")
        interval = bounds.strip("[]").replace(", ", " to ")
        sentence = (f"Adverse impact: {at_quota(row.k, quota_free)}, {row.name} ({row.grouping}) have an impact "
                    "ratio of "
                    f"{estimate_text} with {row.model} for {subtask_name(row.subtask)}, below {threshold:g}, and the "
                    f"test of equal selection rates rejects ({round(ci * 100)} % CI {interval}{{p}}).")
        out.append(Finding("impact", row.model, row.subtask, row.category, int(row.k), value, low, high,
                           1 - row.impact_ratio, sentence, float(row.p_adj), row.grouping, row.name))
    return out


def findings(at_k: pd.DataFrame, verdicts: pd.DataFrame | None, *, reference: str, ci: float,
             threshold: float, name: Namer = str, test: str = "permutation test",
             quota_free: bool = False) -> list[Finding]:
    """The report's findings, all of them: every adverse-impact verdict (lowest ratio first), then every significant
    gap (largest first, each naming ``test``, the test behind its p-value)."""
    flags = sorted(impact_findings(verdicts, ci=ci, threshold=threshold, quota_free=quota_free),
                   key=lambda f: -f.size)
    gaps = sorted(gap_findings(at_k, reference=reference, ci=ci, name=name, test=test, quota_free=quota_free),
                  key=lambda f: -f.size)
    return flags + gaps


def not_significant(at_k: pd.DataFrame, ci: float) -> int:
    """How many gaps have an unadjusted interval excluding 0 but are not rejected after adjustment (inconclusive:
    counted in the report, never listed as findings)."""
    excludes = (at_k["dp_gap_lo"] > 0) | (at_k["dp_gap_hi"] < 0)
    return int((excludes & ~significant(at_k, round(1 - ci, 6))).sum())
