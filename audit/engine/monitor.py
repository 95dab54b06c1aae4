"""The monitoring of a task's dated decision logs, look by look (one look: one period's decisions), on the stored
decisions decided as ``verdict`` decides them: rank logs selected at the quota (the design's, or the auditor's k),
0/1 logs on their recorded decisions, score logs on the scoring rate (above the median of the system's scores). The
decisions are counted in the store (per system, pool, group and date), so a log of a million rows is watched in
seconds.

Per system × subtask × grouping × category and per period: the counts, the selection rate, the impact ratio against
the comparator (the category most selected over the watched span, among those of at least 30 decisions), the
cumulative ratio with its anytime-valid band, the ratio of the last ``window`` periods, the detector and its level
and the alarm (:mod:`audit.metrics.monitoring`). A pool counts in the period of its latest decision; a log without a
pool column (one pool per subtask) is read with each period as one pool. The level is corrected for the family as
``verdict`` corrects it: m = the family's pairs of categories (every pair of each grouping: the comparator is chosen
from the data), so the chance of any false alarm of a fair family within ``horizon`` looks is at most α.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit.design import AuditDesign
from audit.enums import DEFAULT_FAMILY, Family
from audit.errors import AuditError
from audit.metrics.ll144 import MIN_APPLICANTS, UNKNOWN
from audit.metrics.monitoring import HORIZON, WINDOW, LookCounts, watch_pair
from audit.engine.verdict import FAMILIES
from audit.store.database import Store
from audit.tasks.designs import completed
from audit.engine.tables import one_task

#: a period's name → its pandas period frequency (weeks run Monday to Sunday)
PERIODS = {"day": "D", "week": "W-SUN", "month": "M", "quarter": "Q"}
LOOK_COLUMNS = ["model", "subtask", "grouping", "category", "name", "comparator", "period", "look", "members",
                "selected", "rate", "comparator_members", "comparator_selected", "comparator_rate", "ratio",
                "cumulative_ratio", "band_lo", "band_hi", "recent_ratio", "detector", "level", "alarm"]
SUMMARY_COLUMNS = ["model", "subtask", "grouping", "category", "name", "comparator", "members", "selected", "rate",
                   "cumulative_ratio", "band_lo", "band_hi", "baseline_ratio", "recent_ratio", "change", "detector",
                   "level", "family_size", "alarm", "first_alarm", "evidence_then", "to_clear"]


@dataclass(frozen=True)
class MonitorSettings:
    """What a monitoring looks at: the look ``period``, decisions from ``since`` (ISO date; empty: all), the quota
    ``k`` of rank logs (None: the design's), the ratio ``threshold``, the false-alarm bound ``alpha`` over
    ``horizon`` looks, the multiple-testing ``family`` (as ``verdict``'s) and the ``window`` of the recent ratio."""

    period: str = "week"
    since: str = ""
    k: int | None = None
    threshold: float = 0.8
    alpha: float = 0.05
    family: Family = DEFAULT_FAMILY
    horizon: int = HORIZON
    window: int = WINDOW

    def check(self) -> None:
        """An AuditError for a setting out of range."""
        if self.period not in PERIODS:
            raise AuditError(f"--period {self.period}: choose one of {', '.join(PERIODS)}")
        if self.family not in FAMILIES:
            raise AuditError(f"--family {self.family}: choose one of {', '.join(FAMILIES)}")
        if not 0 < self.threshold <= 1:
            raise AuditError(f"--threshold {self.threshold:g}: give an impact-ratio threshold in (0, 1]")
        if self.k is not None and self.k < 1:
            raise AuditError(f"--k {self.k}: the quota is a whole number from 1")
        if not 0 < self.alpha < 1:
            raise AuditError(f"--alpha {self.alpha:g}: give a false-alarm bound strictly between 0 and 1")
        if self.horizon < 1:
            raise AuditError(f"--horizon {self.horizon}: at least one look")
        if self.window < 1:
            raise AuditError(f"--window {self.window}: at least one period")


@dataclass(frozen=True)
class Monitoring:
    """A task's monitoring: ``looks`` (:data:`LOOK_COLUMNS`, one row per watched pair and period), ``summary``
    (:data:`SUMMARY_COLUMNS`, one row per watched pair: the state at the last look), the ``periods`` (start dates),
    the quota ``k`` of rank logs and why, the decisions left out for want of a date, and the settings."""

    task: str
    settings: MonitorSettings
    looks: pd.DataFrame
    summary: pd.DataFrame
    periods: tuple[str, ...]
    k: int
    quota_reason: str
    undated: int

    def guarantee(self) -> str:
        """The false-alarm bound in words."""
        s = self.settings
        return (f"An alarm needs the detector at its level (evidence) and the ratio of the last {s.window} "
                f"{s.period}s below {s.threshold:g} (size). For a fair system the chance of any false alarm within "
                f"{s.horizon} looks ({s.period}s) is at most α = {s.alpha:g}, corrected over each family "
                f"'{s.family}' ({FAMILIES[s.family]}) of m pairs by the level {s.horizon}·m/α; past the horizon it "
                f"grows by α per {s.horizon} looks.")


def watched(store: Store, task: str, settings: MonitorSettings) -> Monitoring | None:
    """:func:`monitor_table` of ``task`` (None where it has no dated recorded decisions)."""
    if task not in store.dated_tasks():
        return None
    return monitor_table(store, task, settings)


def monitor_table(store: Store, task: str | None, settings: MonitorSettings) -> Monitoring:
    """The monitoring of ``task``'s dated recorded systems in ``store`` under ``settings`` (see the module); the
    decisions are counted in the store (:meth:`audit.store.database.Store.decision_counts`), never read whole."""
    settings.check()
    designs = store.designs()
    task = one_task(sorted({t for t, _ in designs}), task)
    subtasks = sorted(s for t, s in designs if t == task)
    design = completed(designs[task, subtasks[0]])
    k, why = design.audited_quota(settings.k)
    systems, counts = store.decision_counts(task, k)
    if systems.empty:
        raise AuditError(f"task {task!r} holds no recorded decisions: monitoring reads an imported decision log")
    undated = int(counts.loc[counts["date"].isna(), "n"].sum())
    counts = counts[counts["date"].notna()]
    if counts.empty:
        raise AuditError(f"task {task!r} holds no dated decisions: monitoring reads a decision log imported with a "
                         "date column (the spec's date:)")
    counts = _with_periods(counts, settings)
    if counts.empty:
        raise AuditError(f"--since {settings.since}: task {task!r} has no decisions from that date on")
    periods = pd.period_range(counts["period"].min(), counts["period"].max(), freq=PERIODS[settings.period])
    counts["look"] = counts["period"].array.asi8 - periods[0].ordinal
    names = systems.set_index("system")[["model", "subtask"]]
    watched = [pair for grouping in design.groupings
               for pair in _pairs(counts.assign(category=_categories(counts["group"], design, grouping)), grouping,
                                  names, len(periods))]
    sizes = _family_sizes(watched, settings.family)
    starts = tuple(str(p.start_time.date()) for p in periods)
    looks, summary = [], []
    for pair in watched:
        size = sizes[pair.family_key(settings.family)]
        watch = watch_pair(pair.counts, alpha=settings.alpha, threshold=settings.threshold, horizon=settings.horizon,
                           family=size, window=settings.window)
        frame = _look_rows(pair, watch, starts, design)
        looks.append(frame)
        summary.append(_summary_row(pair, watch, frame, settings, size))
    look_table = pd.concat(looks, ignore_index=True) if looks else pd.DataFrame(columns=LOOK_COLUMNS)
    summary_table = pd.DataFrame(summary, columns=SUMMARY_COLUMNS)
    return Monitoring(task, settings, look_table[LOOK_COLUMNS], summary_table, starts, k, why, undated)


def _with_periods(counts: pd.DataFrame, settings: MonitorSettings) -> pd.DataFrame:
    """``counts`` (per system, pool, group and date) from ``since`` on, per system, pool and group with the
    ``period`` of the pool's latest decision; a system whose subtask is one pool gets one pool per period."""
    frequency = PERIODS[settings.period]
    counts = counts.reset_index(drop=True)
    dates = counts["date"].astype(str)
    days = pd.Series(pd.to_datetime(dates.unique(), format="%Y-%m-%d"), index=dates.unique())
    counts = counts.assign(day=dates.map(days).to_numpy())
    single = (counts.groupby("system")["pool"].transform("nunique") == 1).to_numpy()
    latest = counts.groupby(["system", "pool"])["day"].transform("max")
    counts = counts.assign(day=counts["day"].where(single, latest))
    if settings.since:
        counts = counts[counts["day"] >= pd.Timestamp(settings.since)]
    counts = counts.assign(period=counts["day"].dt.to_period(frequency))
    counts["pool"] = np.where(single[counts.index], counts["period"].array.asi8, counts["pool"].astype("int64"))
    summed = counts.groupby(["system", "pool", "group", "period"], as_index=False, observed=True)[["n", "chosen"]].sum()
    return summed


def _categories(groups: pd.Series, design: AuditDesign, grouping: str) -> pd.Series:
    codes = groups.astype(str)
    return codes.map({code: design.category(code, grouping) for code in codes.unique()})


@dataclass(frozen=True)
class _Pair:
    """One watched pair (category against the comparator) of one system, subtask and grouping."""

    model: str
    subtask: str
    grouping: str
    category: str
    comparator: str
    counts: LookCounts
    categories: int  # known categories of the grouping (its pairs count in the family)

    def family_key(self, family: Family) -> tuple:
        return {Family.GROUPING: (self.model, self.subtask, self.grouping), Family.SYSTEM: (self.model, self.subtask),
                Family.AUDIT: ()}[family]


def _known(category: str) -> bool:
    return UNKNOWN not in category.split("_")


def _pairs(counts: pd.DataFrame, grouping: str, names: pd.DataFrame, looks: int) -> list[_Pair]:
    """Every known category of each system against its comparator, with its counts per pool and look."""
    out = []
    counts = counts[counts["category"].map(_known)]
    for system, part in counts.groupby("system", sort=True):
        table = part.groupby(["look", "pool", "category"], sort=True)[["n", "chosen"]].sum().unstack(
            "category", fill_value=0)
        members, chosen = table["n"], table["chosen"]
        totals, selected = members.sum(), chosen.sum()
        eligible = totals.index[totals >= MIN_APPLICANTS]
        rates = (selected / totals)[eligible if len(eligible) else totals.index]
        if rates.empty:
            continue
        comparator = str(rates.sort_index().idxmax())
        look = table.index.get_level_values("look").to_numpy(dtype=np.int64)
        model, subtask = names.loc[system, "model"], names.loc[system, "subtask"]
        for category in sorted(c for c in members.columns if c != comparator):
            n_a, x = members[category].to_numpy(np.int64), chosen[category].to_numpy(np.int64)
            n_b, x_b = members[comparator].to_numpy(np.int64), chosen[comparator].to_numpy(np.int64)
            out.append(_Pair(str(model), str(subtask), grouping, str(category), comparator,
                             LookCounts(look, n_a, n_b, x + x_b, x, looks), len(members.columns)))
    return out


def _family_sizes(pairs: list[_Pair], family: Family) -> dict[tuple, int]:
    """Each family's m: the pairs of categories of every grouping in it (G(G − 1)/2 for G categories), as
    ``verdict`` counts its family."""
    groupings: dict[tuple, dict[tuple, int]] = {}
    for pair in pairs:
        groupings.setdefault(pair.family_key(family), {})[(pair.model, pair.subtask, pair.grouping)] = pair.categories
    return {key: max(1, sum(g * (g - 1) // 2 for g in found.values())) for key, found in groupings.items()}


def _look_rows(pair: _Pair, watch, starts: tuple[str, ...], design: AuditDesign) -> pd.DataFrame:
    n_a, x_a, n_b, x_b = pair.counts.totals()
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(n_a * n_b * x_b > 0, (x_a / n_a) / (x_b / n_b), np.nan)
    return pd.DataFrame({
        "model": pair.model, "subtask": pair.subtask, "grouping": pair.grouping, "category": pair.category,
        "name": design.display_name(pair.category, pair.grouping), "comparator": pair.comparator,
        "period": list(starts), "look": np.arange(len(starts)), "members": n_a.astype(np.int64),
        "selected": x_a.astype(np.int64), "rate": watch.rate_a, "comparator_members": n_b.astype(np.int64),
        "comparator_selected": x_b.astype(np.int64), "comparator_rate": watch.rate_b, "ratio": ratio,
        "cumulative_ratio": watch.ratio, "band_lo": watch.ratio_lo, "band_hi": watch.ratio_hi,
        "recent_ratio": watch.recent, "detector": watch.detector, "level": watch.level, "alarm": watch.alarm})


def _summary_row(pair: _Pair, watch, frame: pd.DataFrame, settings: MonitorSettings, family_size: int) -> list:
    """The pair's state at the last look, the change view (the last window's ratio against the first window's) and
    its alarm: the period first raised, the detector then, what would clear it."""
    last = frame.iloc[-1]
    window = min(settings.window, len(frame))
    first_window = frame.iloc[:window]
    with np.errstate(invalid="ignore", divide="ignore"):
        baseline = ((first_window["selected"].sum() / first_window["members"].sum())
                    / (first_window["comparator_selected"].sum() / first_window["comparator_members"].sum()))
    baseline = float(baseline) if np.isfinite(baseline) else np.nan
    recent = float(last["recent_ratio"])
    first = watch.first_alarm
    alarm = bool(last["alarm"])
    clear = ""
    if alarm:
        clear = (f"the ratio of the last {settings.window} {settings.period}s at or above {settings.threshold:g} "
                 f"(now {recent:.3g}), or the detector below its level {watch.level:.4g} (now "
                 f"{float(last['detector']):.4g}; it falls as decisions treat the pair alike)")
    members, selected = int(frame["members"].sum()), int(frame["selected"].sum())
    return [pair.model, pair.subtask, pair.grouping, pair.category, frame["name"].iloc[0], pair.comparator, members,
            selected, selected / members if members else np.nan, float(last["cumulative_ratio"]),
            float(last["band_lo"]), float(last["band_hi"]), baseline, recent,
            recent / baseline if baseline and np.isfinite(baseline) else np.nan, float(last["detector"]),
            watch.level, family_size, alarm, frame["period"].iloc[first] if first is not None else "",
            float(frame["detector"].iloc[first]) if first is not None else np.nan, clear]
