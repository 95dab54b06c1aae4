"""The monitoring figure: one watched pair's impact ratio look by look (:mod:`audit.monitor`), for the Monitor page
and the report's Monitoring section."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit.formatting import subtask_name
from audit.present.charts import SERIES_COLOURS, _layout, _rgba, escape

CUMULATIVE, RECENT, ALARM = SERIES_COLOURS[0], SERIES_COLOURS[3], "#D55E00"


def _hover(looks: pd.DataFrame, name: str, comparator: str, period: str) -> list[str]:
    """Each look's counts behind its point, in words."""
    def shown(value: float) -> str:
        return "n/a" if pd.isna(value) else f"{value:.3f}"

    return [f"{period} of {p}<br>{escape(name)}: {s} of {m} selected ({shown(r)})<br>{escape(comparator)}: {cs} of {cm} "
            f"({shown(cr)})<br>this period's ratio {shown(x)}<br>cumulative {shown(c)} [{shown(lo)}, {shown(hi)}]"
            f"<br>last window {shown(w)}<br>detector {d:.4g} (level {lv:.4g}){'<br><b>alarm</b>' if a else ''}"
            for p, m, s, r, cm, cs, cr, x, c, lo, hi, w, d, lv, a in zip(
                looks["period"], looks["members"], looks["selected"], looks["rate"], looks["comparator_members"],
                looks["comparator_selected"], looks["comparator_rate"], looks["ratio"], looks["cumulative_ratio"],
                looks["band_lo"], looks["band_hi"], looks["recent_ratio"], looks["detector"], looks["level"],
                looks["alarm"])]


def ratio_over_time(looks: pd.DataFrame, *, threshold: float, period: str = "week") -> go.Figure:
    """The impact ratio of one watched pair (``looks``: its rows of :attr:`audit.monitor.Monitoring.looks`, in look
    order) over time: the cumulative ratio with its anytime-valid band, the ratio of the last window, the
    ``threshold`` and the looks with an alarm; hover gives the counts behind each point."""
    first = looks.iloc[0]
    name, comparator = str(first["name"]), str(first["comparator"])
    x = pd.to_datetime(looks["period"])
    hover = _hover(looks, name, comparator, period)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]),
                             y=np.concatenate([looks["band_hi"], looks["band_lo"][::-1]]),
                             fill="toself", fillcolor=_rgba(CUMULATIVE, 0.18), line=dict(width=0), hoverinfo="skip",
                             name="anytime-valid band"))
    fig.add_trace(go.Scatter(x=x, y=looks["cumulative_ratio"], mode="lines", name="cumulative ratio",
                             line=dict(color=CUMULATIVE, width=2), hovertext=hover, hoverinfo="text"))
    fig.add_trace(go.Scatter(x=x, y=looks["recent_ratio"], mode="lines", name="ratio of the last window",
                             line=dict(color=RECENT, width=2, dash="dot"), hovertext=hover, hoverinfo="text"))
    alarmed = looks["alarm"].astype(bool).to_numpy()
    if alarmed.any():
        fig.add_trace(go.Scatter(x=x[alarmed], y=looks["recent_ratio"][alarmed], mode="markers", name="alarm",
                                 marker=dict(color=ALARM, size=9, symbol="x"), hovertext=np.array(hover)[alarmed],
                                 hoverinfo="text"))
    fig.add_hline(y=threshold, line=dict(color="#888888", dash="dash", width=1),
                  annotation_text=f"threshold {threshold:g}")
    fig.update_yaxes(title_text=f"impact ratio ({escape(name)} / {escape(comparator)})", rangemode="tozero")
    fig.update_xaxes(title_text=period)
    title = (f"{first['model']} · {subtask_name(str(first['subtask']))} · {first['grouping']}: {name} against "
             f"{comparator}")
    return _layout(fig, title, 420, legend="")
