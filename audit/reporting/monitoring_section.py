"""The report's Monitoring section, for a task with dated recorded decisions: the monitoring plan (what is watched,
the threshold, the look schedule, the method and its false-alarm bound, the family), the alarms raised and when, and
each alarmed pair's ratio over time (the Monitor page's figure). The part of a post-market monitoring plan (EU AI Act,
Article 72) a tool can produce; the numbers are :func:`audit.monitor.monitor_table`'s, as ``monitor`` prints them."""
from __future__ import annotations

from collections.abc import Callable
from html import escape

import pandas as pd
import plotly.graph_objects as go

from audit.formatting import number, subtask_name
from audit.monitor import Monitoring
from audit.present.monitor_chart import ratio_over_time
from audit.reporting.html import table

#: most alarmed pairs drawn (all are in the table; ``python -m audit monitor`` lists every look)
FIGURES = 6
PAIR = ["model", "subtask", "grouping", "category"]


def _plan(monitoring: Monitoring) -> str:
    s, periods = monitoring.settings, monitoring.periods
    decided = (f"{monitoring.quota_reason} (rank logs selected at k = {monitoring.k}, 0/1 logs on their recorded "
               "decisions, score logs on the scoring rate: above the median of the system's scores)")
    undated = (f" {monitoring.undated} decisions without a date are not watched." if monitoring.undated else "")
    rows = [("watched", "per system × subtask × grouping × category: the selection rate and the impact ratio against "
                        "the comparator (the most-selected category over the watched span), cumulative with its "
                        f"anytime-valid band, and over the last {s.window} {s.period}s; decisions as the verdict "
                        f"decides them: {decided}.{undated}"),
            ("threshold", f"impact ratio {s.threshold:g}"),
            ("look schedule", f"one look per {s.period}: {len(periods)} looks, from the {s.period} of {periods[0]} "
                              f"to that of {periods[-1]}" + (f" (decisions from {s.since})" if s.since else "")),
            ("method", "within each pool (a whole period of an unpooled log is one pool), a likelihood ratio of "
                       "Fisher's noncentral hypergeometric law against the hypergeometric law of no difference; a "
                       "Shiryaev–Roberts detector over the looks, averaged over a grid of odds ratios, so old "
                       "evidence cannot mask a recent drift; the band is Robbins' normal-mixture confidence sequence "
                       "of the log ratio"),
            ("false-alarm bound", monitoring.guarantee())]
    cells = "".join(f"<tr><th>{escape(name)}</th><td>{escape(text)}</td></tr>"
                    for name, text in rows)
    return f"<table class='scope'>{cells}</table>"


def _alarms(summary: pd.DataFrame) -> str:
    raised = summary[summary["alarm"] | (summary["first_alarm"] != "")].sort_values("recent_ratio")
    if raised.empty:
        return "<p><b>No alarm has been raised.</b></p>"
    shown = pd.DataFrame({"system": raised["model"], "subtask": raised["subtask"].map(subtask_name),
                          "grouping": raised["grouping"], "group": raised["name"],
                          "against": raised["comparator"].astype(str),
                          "now": ["alarm" if a else "cleared" for a in raised["alarm"]],
                          "first raised": raised["first_alarm"], "detector then": raised["evidence_then"].map(
                              lambda v: f"{v:.4g}"),
                          "last window": raised["recent_ratio"].map(lambda v: number(v, 3)),
                          "cumulative [band]": [f"{number(r, 3)} [{number(lo, 3)}, {number(hi, 3)}]" for r, lo, hi
                                                in zip(raised["cumulative_ratio"], raised["band_lo"],
                                                       raised["band_hi"])]})
    clear = "".join(f"<li>{escape(str(m))} · {escape(subtask_name(str(t)))} · {escape(str(n))}: clears with "
                    f"{escape(str(c))}</li>" for m, t, n, c in zip(raised["model"], raised["subtask"], raised["name"],
                                                                    raised["to_clear"]) if c)
    return (table(shown, numeric=("detector then", "last window", "cumulative [band]"), css="long")
            + (f"<ul>{clear}</ul>" if clear else ""))


def monitoring_section(monitoring: Monitoring | None, figure: Callable[[go.Figure], str]) -> str:
    """The section's HTML (empty without a monitoring); ``figure`` draws a Plotly figure into the report."""
    if monitoring is None:
        return ""
    summary = monitoring.summary
    raised = int(summary["alarm"].sum())
    drawn = summary[summary["alarm"]].sort_values("recent_ratio").head(FIGURES)
    if drawn.empty:  # no alarm: the pair closest to one
        drawn = summary.sort_values("recent_ratio").head(1)
    s, figures = monitoring.settings, []
    for _, pair in drawn.iterrows():
        looks = monitoring.looks[(monitoring.looks[PAIR] == pair[PAIR].to_numpy()).all(axis=1)]
        figures.append(f"<div class=keep>{figure(ratio_over_time(looks, threshold=s.threshold, period=s.period))}"
                       "</div>")
    return (f"<h2 class=pagebreak>Monitoring</h2><p>The task's dated decisions watched {s.period} by {s.period}: <b>{raised} of {len(summary)} watched pairs in alarm at the last "
            f"look</b>. The monitoring plan:</p>{_plan(monitoring)}<h3>Alarms raised and when</h3>"
            f"{_alarms(summary)}<h3>Ratio over time</h3>{''.join(figures)}")
