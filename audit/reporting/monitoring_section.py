"""The report's Monitoring section for a task with dated recorded decisions: the monitoring plan (metrics,
threshold, look schedule, method and its false-alarm bound, family), the alarms raised and when, and the figure of
each alarmed system (the Monitor page's, :mod:`audit.present.monitor_chart`). Every name is escaped."""
from __future__ import annotations

from collections.abc import Callable
from html import escape

import pandas as pd
import plotly.graph_objects as go

from audit.engine.verdict import FAMILIES
from audit.engine.monitor import MonitorSettings, Monitoring, monitor_table
from audit.enums import Family
from audit.present import monitor_chart
from audit.store.database import Store

#: at most this many alarmed systems get a figure (the table lists every alarm)
MAX_FIGURES = 6
_SHOWN = ["system", "subtask", "grouping", "category", "comparator", "first raised", "evidence then",
          "recent ratio", "what would clear it"]


def watched(store: Store, task: str, threshold: float, family: Family, *, k: int | None = None,
            alpha: float = 0.05) -> Monitoring | None:
    """The task's weekly monitoring at the report's quota ``k`` (None: the design's), threshold, family and level
    ``alpha`` (None: no dated recorded decisions)."""
    if task not in store.dated_tasks():
        return None
    return monitor_table(store, task, MonitorSettings(k=k, threshold=threshold, alpha=alpha,
                                                      family=family))


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if pd.isna(value) else f"{value:.3g}"
    return escape(str(value))


def monitoring_section(monitoring: Monitoring | None, figure: Callable[[go.Figure], str]) -> str:
    """The section as HTML ("" without a monitoring); ``figure`` embeds a figure as the report embeds its others."""
    if monitoring is None:
        return ""
    s, summary = monitoring.settings, monitoring.summary
    alarms = monitor_chart.alarm_table(summary)
    alarms = alarms[alarms["alarm"].astype(bool)]
    plan = {"metrics": "per system, subtask, grouping and category against the most-selected category: the "
                       "selection rate, the impact ratio, its cumulative value with an anytime-valid band, the ratio "
                       f"of the last {s.window} {s.period}s",
            "threshold": f"impact ratio {s.threshold:g}",
            "look schedule": f"every {s.period} ({len(monitoring.periods)} looks, {monitoring.periods[0]} to "
                             f"{monitoring.periods[-1]})",
            "method and false-alarm bound": monitoring.guarantee(),
            "family": f"{s.family}: {FAMILIES[s.family]}"}
    rows = "".join(f"<tr><th>{escape(name)}</th><td>{escape(text)}</td></tr>" for name, text in plan.items())
    parts = [f"<h2>Monitoring</h2><p>The dated decisions of task {escape(monitoring.task)}, watched look by look "
             "(<code>python -m audit monitor</code>): the monitoring plan, the alarms raised and when.</p>"
             f"<table class='scope'>{rows}</table>"]
    if monitoring.undated:
        parts.append(f"<p class=muted>{monitoring.undated} decisions without a date are left out.</p>")
    parts.append(f"<h3>Alarms: {len(alarms)} of {len(summary)} watched pairs</h3>")
    if len(alarms):
        head = "".join(f"<th>{escape(c)}</th>" for c in _SHOWN)
        body = "".join("<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in _SHOWN) + "</tr>"
                       for _, row in alarms.iterrows())
        parts.append(f"<table class='monitoring'><tr>{head}</tr>{body}</table>")
    else:
        parts.append("<p>No alarm: no watched pair showed evidence of adverse impact at its level.</p>")
    series = monitor_chart.watched_series(summary)
    alarmed = [key for key in series if summary.loc[(summary[monitor_chart.KEYS] == list(key)).all(axis=1),
                                                    "alarm"].any()]
    for key in (alarmed or series[:1])[:MAX_FIGURES]:
        parts.append(f"<div class=keep>{figure(monitor_chart.monitor_figure(monitoring.looks, key, s.threshold))}"
                     "</div>")
    return "".join(parts)
