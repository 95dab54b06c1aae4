"""The Monitor page's and the report's figure and alarm table over a :class:`audit.engine.monitor.Monitoring`: per category
of one system, subtask and grouping, the cumulative impact ratio with its anytime-valid band, the ratio of the recent
window, the threshold and the alarmed periods, the counts behind each point on hover. Names from data are escaped."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from audit.formatting import subtask_name
from audit.present.charts import _band, _layout, escape, series_colours

#: the summary's columns as the alarm table shows them
ALARM_COLUMNS = {"model": "system", "subtask": "subtask", "grouping": "grouping", "name": "category",
                 "comparator": "comparator", "alarm": "alarm", "first_alarm": "first raised",
                 "evidence_then": "evidence then", "cumulative_ratio": "cumulative ratio",
                 "recent_ratio": "recent ratio", "to_clear": "what would clear it"}
KEYS = ["model", "subtask", "grouping"]


def alarm_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per watched pair, alarmed pairs first (earliest raised first), with readable column names; the
    detector when first raised in four significant digits (empty where never raised)."""
    ordered = summary.assign(_order=~summary["alarm"].astype(bool)).sort_values(
        ["_order", "first_alarm", "model", "subtask", "grouping", "category"], kind="stable")
    out = ordered[list(ALARM_COLUMNS)].rename(columns=ALARM_COLUMNS).reset_index(drop=True)
    out["evidence then"] = ["" if pd.isna(v) else f"{float(v):.4g}" for v in out["evidence then"]]
    return out


def watched_series(summary: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The (model, subtask, grouping) of the watched pairs, those with an alarm first."""
    alarmed = summary.groupby(KEYS, sort=True)["alarm"].any().sort_values(ascending=False, kind="stable")
    return [tuple(map(str, key)) for key in alarmed.index]


def _hover(part: pd.DataFrame) -> list[str]:
    return [f"{escape(str(r.name))} vs {escape(str(r.comparator))}, {r.period}<br>"
            f"this period: {r.selected}/{r.members} selected against {r.comparator_selected}/{r.comparator_members}"
            f"<br>cumulative ratio {r.cumulative_ratio:.3f} [{r.band_lo:.3f}, {r.band_hi:.3f}], recent "
            f"{r.recent_ratio:.3f}<br>detector {r.detector:.3g} (level {r.level:.3g})"
            + ("<br><b>alarm</b>" if r.alarm else "") for r in part.itertuples(index=False)]


def monitor_figure(looks: pd.DataFrame, key: tuple[str, str, str], threshold: float) -> go.Figure:
    """The ratios over time of every category of ``key`` = (model, subtask, grouping) in ``looks``."""
    model, subtask, grouping = key
    rows = looks[(looks["model"] == model) & (looks["subtask"] == subtask) & (looks["grouping"] == grouping)]
    colours = series_colours(rows["name"].astype(str).unique())
    fig = go.Figure()
    for name, part in rows.sort_values("look").groupby("name", sort=True):
        colour, shown = colours[str(name)], escape(str(name))
        fig.add_trace(_band(part.assign(ratio_lo=part["band_lo"], ratio_hi=part["band_hi"]), "period", "ratio",
                            colour, shown))
        fig.add_trace(go.Scatter(x=part["period"], y=part["cumulative_ratio"], mode="lines+markers",
                                 name=f"{shown}: cumulative", legendgroup=shown, line=dict(color=colour, width=2),
                                 marker=dict(size=4), text=_hover(part), hovertemplate="%{text}<extra></extra>"))
        fig.add_trace(go.Scatter(x=part["period"], y=part["recent_ratio"], mode="lines",
                                 name=f"{shown}: recent window", legendgroup=shown, hoverinfo="skip",
                                 line=dict(color=colour, width=1.5, dash="dash")))
        alarmed = part[part["alarm"].astype(bool)]
        if len(alarmed):
            fig.add_trace(go.Scatter(x=alarmed["period"], y=alarmed["recent_ratio"], mode="markers",
                                     name=f"{shown}: alarm", legendgroup=shown, text=_hover(alarmed),
                                     hovertemplate="%{text}<extra></extra>",
                                     marker=dict(symbol="x", size=9, color="#D55E00")))
    fig.add_hline(y=threshold, line=dict(color="#888888", dash="dot", width=1),
                  annotation_text=f"threshold {threshold:g}", annotation_position="bottom right")
    fig.update_xaxes(title_text="period (start)")
    fig.update_yaxes(title_text="impact ratio", rangemode="tozero")
    title = f"Impact ratio over time: {model}, {subtask_name(subtask)}, {grouping}"
    return _layout(fig, title, 460, legend="category")
