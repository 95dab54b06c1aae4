"""A seeded synthetic dated 0/1 decision log (clearly synthetic: for benchmarks, tests and the demo store).

Each job receives ``per_week`` applicants a week for ``weeks`` weeks from ``start`` (a Monday), each dated on a day of
that week; sex F or M with chance ½ each; selected with chance ``rate``, a woman's chance multiplied by the job's
drift ratio from its drift week on (``drifts``: job index → (week, ratio), weeks counted from 0). With ``pool``,
each job's applicants of a week are decided in requisitions of ``pool`` (column ``req``, read by :data:`POOLED_SPEC`).
"""
from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

SPEC = "applicant: id\ndemographics: [sex]\noutcome: {selected: selected}\nsubtask: job\ndate: day\n"
"""The spec that reads :func:`dated_log`'s frames."""
POOLED_SPEC = SPEC + "pool: req\n"
"""The spec that reads :func:`dated_log`'s frames made with ``pool``."""


def dated_log(jobs: int, weeks: int, per_week: int, *, drifts: dict[int, tuple[int, float]] | None = None,
              rate: float = 0.3, start: str = "2025-01-06", seed: int = 0, first_id: int = 0,
              first_week: int = 0, pool: int | None = None) -> pd.DataFrame:
    """Columns ``id``, ``sex``, ``job`` (``job-01`` …), ``day`` (ISO date) and ``selected`` (0/1), one row per
    applicant, in date order; ids ``s<number>`` from ``first_id``; weeks ``first_week`` … ``first_week + weeks − 1``
    (so a later call continues the same log); with ``pool``, a column ``req`` (``<job>-w<week>-<n>``: the job's
    applicants of one week in arrival order, ``pool`` at a time)."""
    rng = np.random.default_rng(seed)
    size = jobs * weeks * per_week
    job = np.repeat(np.arange(jobs), per_week)[None, :].repeat(weeks, 0).ravel()
    week = np.repeat(np.arange(first_week, first_week + weeks), jobs * per_week)
    female = rng.random(size) < 0.5
    chance = np.full(size, rate)
    for index, (drift_week, ratio) in (drifts or {}).items():
        chance[(job == index) & (week >= drift_week) & female] *= ratio
    day = week * 7 + rng.integers(0, 7, size)
    order = np.argsort(day, kind="stable")
    days = (np.datetime64(date.fromisoformat(start)) + day[order]).astype(str)
    frame = pd.DataFrame({"id": [f"s{i}" for i in range(first_id, first_id + size)],
                          "sex": np.where(female[order], "F", "M"),
                          "job": np.char.add("job-", np.char.zfill((job[order] + 1).astype(str), 2)),
                          "day": days, "selected": (rng.random(size) < chance[order]).astype(int)})
    if pool:
        weeks_of = pd.Series(week[order]).astype(str).to_numpy()
        arrival = frame.groupby([frame["job"], weeks_of]).cumcount().to_numpy()
        frame["req"] = frame["job"] + "-w" + weeks_of + "-" + (arrival // pool).astype(str)
    return frame
