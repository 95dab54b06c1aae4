"""Plotly figure builders over metric tables: the same figure is shown in the dashboard and exported for reports.

Colours are colour-blind safe (Okabe–Ito); the colours a task definition fixes for its group codes
(:data:`audit.tasks.GROUP_COLOURS`) keep a group looking the same on every page and in every grouping. Figures use a neutral template; the dashboard re-themes them for light
and dark mode. Nothing here computes a metric: inputs are tables from :mod:`audit.metrics`. Names that come from
data (models, subtasks, groups) are HTML-escaped, since Plotly renders tags in titles, legends and hover text.
"""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from audit.formatting import MIN_SYSTEMS, at_quota, subtask_name
from audit.metrics.validity import PAIRINGS
from audit.tasks import GROUP_COLOURS, GROUP_NAME_COLOURS

OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")
#: Paul Tol's "bright" scheme (colour-blind safe) for models and metrics, kept apart from the group colours.
SERIES_COLOURS = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB")
METRIC_NAMES = {"true": "true gap", "delta": "δ", "jsd": "JSD", "emd": "EMD", "rabbi": "RABBI"}
GAP_NAMES = {"dp": "ΔDP", "eo": "ΔEO"}
TEMPLATE = "plotly_white"
METRICS = tuple(metric for metric, _, _ in PAIRINGS["dp"][1])
HOVER_COLUMNS = ("delta", "jsd", "emd", "rabbi", "delta_qualified", "jsd_qualified", "emd_qualified", "rabbi_qualified",
                 "dp_gap", "eo_gap")


def group_colours(groups: Sequence[str], names: Mapping[str, str] | None = None) -> dict[str, str]:
    """A fixed colour for each group: the one fixed for what it is (its display name from ``names``, or the group
    itself when it is a name: ``Hispanic women`` in every task), else the one its task declares for its code, else
    the palette in sorted order, skipping colours already taken (no two groups of a chart share one)."""
    names = names or {}
    fixed = {g: GROUP_NAME_COLOURS.get(names.get(g, g)) or GROUP_NAME_COLOURS.get(g) or GROUP_COLOURS.get(g)
             for g in set(groups)}
    free = [c for c in OKABE_ITO if c not in set(fixed.values())] or list(OKABE_ITO)
    unknown = sorted(g for g, colour in fixed.items() if colour is None)
    return {g: fixed[g] or free[unknown.index(g) % len(free)] for g in groups}


def series_colours(names: Sequence[str]) -> dict[str, str]:
    """A colour per model (or metric) name, stable for a given sorted set of names."""
    return {name: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, name in enumerate(sorted(set(names)))}


def escape(text: str) -> str:
    """``<``, ``>`` and ``&`` as entities, once. Quotes stay as they are: Plotly shows ``&quot;`` literally."""
    return html.escape(text, quote=False)


def _escaped(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its name columns HTML-escaped (Plotly renders tags in names, titles and hover text)."""
    names = [c for c in ("model", "subtask", "group", "scope") if c in table]
    return table.assign(**{c: table[c].astype(str).map(escape) for c in names}) if names else table


def _groups(table: pd.DataFrame, column: str, names: Mapping[str, str] | None) -> tuple[pd.DataFrame, dict[str, str]]:
    """``table`` escaped with the group codes of ``column`` shown by their display name (``names``; the code where
    none is given), and each shown name's colour, fixed by its code."""
    colours = group_colours(table[column].astype(str).unique(), names)
    shown = {code: escape((names or {}).get(code, code)) for code in colours}
    named = _escaped(table).assign(**{column: table[column].astype(str).map(shown)})
    return named, {shown[code]: colour for code, colour in colours.items()}


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _layout(fig: go.Figure, title: str, height: int, legend: str = "group") -> go.Figure:
    fig.update_layout(template=TEMPLATE, title=escape(title), height=height, legend_title_text=legend,
                      margin=dict(l=60, r=20, t=90, b=50))
    return fig




def _r_text(correlations: pd.DataFrame | None, gap: str, metric: str) -> str:
    if correlations is None:
        return ""
    row = correlations[(correlations["gap"] == gap) & (correlations["metric"] == metric)]
    if row.empty:
        return "r = n/a"
    n = int(row["n"].iloc[0]) if pd.notna(row["n"].iloc[0]) else 0
    if n < MIN_SYSTEMS:
        return f"r not shown: too few systems (n = {n} < {MIN_SYSTEMS})"
    if pd.isna(row["r"].iloc[0]):
        return f"r not defined: constant values (n = {n})"
    band = ""
    if "r_lo" in row and pd.notna(row["r_lo"].iloc[0]):
        band = f" [{row['r_lo'].iloc[0]:+.2f}, {row['r_hi'].iloc[0]:+.2f}]"
    return f"r = {row['r'].iloc[0]:+.2f}{band} (n = {n})"


def _uncertainty_hover(table: pd.DataFrame, start: int) -> tuple[list[str], str]:
    """Extra hover columns and lines for each gap's CI and adjusted p-value, where the table has them."""
    columns, lines = [], []
    for gap, (column, _) in PAIRINGS.items():
        parts = []
        if f"{column}_lo" in table:
            at = start + len(columns)
            columns += [f"{column}_lo", f"{column}_hi"]
            parts.append(f"CI [%{{customdata[{at}]:.3f}}, %{{customdata[{at + 1}]:.3f}}]")
        if f"{column}_padj" in table:
            columns.append(f"{column}_padj")
            parts.append(f"adjusted p = %{{customdata[{start + len(columns) - 1}]:.3g}}")
        if parts:
            lines.append(f"{GAP_NAMES[gap]} " + ", ".join(parts))
    return columns, "".join(f"<br>{line}" for line in lines)


SIGNIFICANCE_RULE = ("◆ marks a gap only where the test of no gap ({test}) rejects at α = {alpha:g} after the "
                     "multiple-comparison adjustment (adjusted p ≤ α); the bootstrap intervals are unadjusted and "
                     "are shown for size, not for significance.")


def significant(table: pd.DataFrame, column: str, alpha: float = 0.05) -> pd.Series:
    """Rows whose adjusted p-value of ``column`` (``*_padj``) is at most ``alpha`` (all False without p-values):
    the one reading of significance the marks, findings and verdicts share."""
    if f"{column}_padj" not in table:
        return pd.Series(False, index=table.index)
    return table[f"{column}_padj"].le(alpha).fillna(False).astype(bool)


def excludes_zero(table: pd.DataFrame, column: str) -> pd.Series:
    """Rows whose CI of ``column`` (``*_lo``/``*_hi``) excludes 0 (all False without bounds)."""
    if f"{column}_lo" not in table:
        return pd.Series(False, index=table.index)
    return (table[f"{column}_lo"] > 0) | (table[f"{column}_hi"] < 0)


def gap_scatter(table: pd.DataFrame, *, k: int, correlations: pd.DataFrame | None = None,
                reference: str = "", alpha: float = 0.05, names: Mapping[str, str] | None = None,
                quota_free: bool = False) -> go.Figure:
    """Each bias metric (columns) against ΔDP and ΔEO (rows) at quota ``k`` (``quota_free``: on the recorded
    decisions, see :func:`audit.formatting.at_quota`), one point per (model, subtask, group),
    coloured by group (one trace per panel keeps the figure fast to build; hover names the group).

    ``table``: metric-table rows at one k. ``correlations``: the overall rows of :func:`audit.metrics.validity`
    (columns gap, metric, r, n, optionally r_lo/r_hi), printed on each panel. Points whose adjusted p-value is at
    most ``alpha`` (:func:`significant`, :data:`SIGNIFICANCE_RULE`) are drawn as diamonds; hover adds the CI and
    adjusted p-value (``*_padj``) if present.
    JSD and EMD have no sign, so they face |gap|, as in validity. ``names``: group code → display name.
    """
    table, colours = _groups(table, "group", names)
    titles = [f"{METRIC_NAMES[m]} vs {'|' + GAP_NAMES[g] + '|' if absolute else GAP_NAMES[g]}<br>"
              f"<sup>{_r_text(correlations, g, m)}</sup>"
              for g in PAIRINGS for m, _, absolute in PAIRINGS[g][1]]
    fig = make_subplots(rows=2, cols=len(METRICS), subplot_titles=titles, vertical_spacing=0.2,
                        horizontal_spacing=0.06)
    extra, extra_hover = _uncertainty_hover(table, 3 + len(HOVER_COLUMNS))
    hover = ("<b>%{customdata[0]}</b> · %{customdata[1]} · %{customdata[2]}<br>"
             + "<br>".join(f"{name} = %{{customdata[{i + 3}]:.3f}}" for i, name in enumerate(HOVER_COLUMNS))
             + extra_hover + "<extra></extra>")
    traces, rows, cols, axes = [], [], [], {}
    low = table["low_label_mass"].to_numpy(dtype=bool) if "low_label_mass" in table else np.zeros(len(table), bool)
    marker = dict(color=table["group"].map(colours).to_numpy(dtype=object), size=9,
                  line=dict(width=0.5, color="#333333"), symbol=np.where(low, "x", "circle"))  # ✕: low label mass
    custom = table[["model", "subtask", "group", *HOVER_COLUMNS, *extra]].to_numpy(dtype=object)
    for row, gap in enumerate(PAIRINGS, start=1):
        gap_column, pairs = PAIRINGS[gap]
        marked = significant(table, gap_column, alpha).to_numpy()
        gap_marker = dict(marker, symbol=["diamond" if m else "circle" for m in marked],
                          line=dict(width=[2 if m else 0.5 for m in marked], color="#111111"))
        for col, (metric, column, absolute) in enumerate(pairs, start=1):
            y = table[gap_column].to_numpy()
            traces.append(go.Scatter(x=table[column].to_numpy(), y=abs(y) if absolute else y, mode="markers",
                                     marker=gap_marker, customdata=custom, hovertemplate=hover, showlegend=False))
            rows.append(row)
            cols.append(col)
            axis = (row - 1) * len(METRICS) + col
            axes[f"xaxis{axis if axis > 1 else ''}"] = dict(
                title_text=METRIC_NAMES[metric] + (" (qualified)" if column.endswith("qualified") else ""))
        axis = (row - 1) * len(METRICS) + 1
        axes[f"yaxis{axis if axis > 1 else ''}"] = dict(title_text=GAP_NAMES[gap])
    for group in sorted(colours):  # legend entries: one marker per group (points carry their colour themselves)
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=group, marker=dict(color=colours[group],
                                 size=9, line=dict(width=0.5, color="#333333")), hoverinfo="skip"))
        rows.append(1)
        cols.append(1)
    fig.add_traces(traces, rows=rows, cols=cols)
    fig.update_layout(axes)
    suffix = f", reference {reference}" if reference else ""
    return _layout(fig, f"Bias metrics against allocation gaps {at_quota(k, quota_free)}{suffix}", 720)


def _band(part: pd.DataFrame, x: str, column: str, colour: str, name: str) -> go.Scatter:
    """A filled band between ``{column}_lo`` and ``{column}_hi`` along ``x`` (no hover, grouped with ``name``)."""
    return go.Scatter(x=list(part[x]) + list(part[x])[::-1],
                      y=list(part[f"{column}_hi"]) + list(part[f"{column}_lo"])[::-1], fill="toself", mode="lines",
                      fillcolor=_rgba(colour, 0.12), line=dict(width=0), hoverinfo="skip", legendgroup=name,
                      showlegend=False, name=f"{name} band")


def gap_curves(table: pd.DataFrame, *, gap: str = "dp", title: str = "", names: Mapping[str, str] | None = None
               ) -> go.Figure:
    """ΔDP (or ΔEO) against the quota k, one line per group, with its bootstrap band where ``*_lo``/``*_hi`` exist.

    ``table``: metric-table rows of one (model, subtask, mode) for every k; ``names``: group code → display name.
    """
    table, colours = _groups(table, "group", names)
    column = PAIRINGS[gap][0]
    fig = go.Figure()
    banded = f"{column}_lo" in table
    for group, part in table.sort_values("k").groupby("group", sort=True, observed=True):
        if banded:
            fig.add_trace(_band(part, "k", column, colours[group], str(group)))
        fig.add_trace(go.Scatter(
            x=part["k"], y=part[column], mode="lines+markers", name=str(group), legendgroup=str(group),
            line=dict(color=colours[group], width=2), marker=dict(size=6),
            hovertemplate=f"{group}<br>k = %{{x}}<br>{GAP_NAMES[gap]} = %{{y:.3f}}<extra></extra>"))
    fig.add_hline(y=0, line=dict(color="#888888", dash="dot", width=1))
    fig.update_xaxes(title_text="quota k", dtick=1)
    fig.update_yaxes(title_text=GAP_NAMES[gap])
    return _layout(fig, title or f"{GAP_NAMES[gap]} against k", 460)


def _error_bars(table: pd.DataFrame, column: str) -> dict | None:
    """Plotly error bars from ``{column}_lo``/``{column}_hi`` (None without them)."""
    if f"{column}_lo" not in table:
        return None
    return dict(type="data", symmetric=False, array=(table[f"{column}_hi"] - table[column]).to_numpy(),
                arrayminus=(table[column] - table[f"{column}_lo"]).to_numpy(), thickness=1, width=2)


def group_correlation_bars(correlations: pd.DataFrame, *, k: int, names: Mapping[str, str] | None = None,
                           quota_free: bool = False) -> go.Figure:
    """Per-group Pearson r of each metric with ΔDP (top) and ΔEO (bottom) across models and subtasks (Figure 6).

    ``correlations``: :func:`audit.metrics.validity` rows whose ``scope`` is a group; ``r_lo``/``r_hi`` (from
    :func:`audit.metrics.bands.validity_bands`) become error bars; ``names``: group code → display name. An r over
    fewer than :data:`MIN_SYSTEMS` points gets no bar (the tables say "too few systems"), and its panel says so.
    """
    correlations, colours = _groups(correlations, "scope", names)
    few = correlations["n"].fillna(0) < MIN_SYSTEMS
    correlations = correlations.assign(r=correlations["r"].mask(few))
    titles = [f"correlation with {GAP_NAMES[g]}" + (f"<br><sup>no bar where too few systems (n < {MIN_SYSTEMS})</sup>"
                                                   if few[correlations["gap"] == g].any() else "") for g in PAIRINGS]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=titles)
    order = [METRIC_NAMES[m] for m in METRICS]
    for row, gap in enumerate(PAIRINGS, start=1):
        rows = correlations[correlations["gap"] == gap]
        for group, part in rows.groupby("scope", sort=True, observed=True):
            fig.add_trace(go.Bar(
                x=part["metric"].map(METRIC_NAMES), y=part["r"], name=str(group), legendgroup=str(group),
                showlegend=row == 1, marker_color=colours[group], customdata=part[["n", "pvalue"]].to_numpy(),
                error_y=_error_bars(part, "r"),
                hovertemplate=f"{group}<br>%{{x}}: r = %{{y:.2f}}<br>n = %{{customdata[0]}}, "
                              "p = %{customdata[1]:.3f}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title_text="Pearson r", range=[-1.05, 1.05], row=row, col=1)
        fig.update_xaxes(categoryorder="array", categoryarray=order, row=row, col=1)
    fig.update_layout(barmode="group")
    return _layout(fig, f"Per-group correlation of bias metrics with allocation gaps {at_quota(k, quota_free)}",
                   640)


def bump_chart(rankings: pd.DataFrame, *, gap: str = "dp") -> go.Figure:
    """Fairness rank of each model (1 = least biased) by the true gap and by each metric, one panel per subtask.

    ``rankings``: :func:`audit.metrics.model_rankings` rows.
    """
    rankings = _escaped(rankings)
    rows = rankings[(rankings["gap"] == gap) & rankings["rank"].notna()]
    subtasks = sorted(rows["subtask"].unique())
    fig = make_subplots(rows=1, cols=max(1, len(subtasks)), subplot_titles=[subtask_name(s) for s in subtasks],
                        shared_yaxes=True, horizontal_spacing=0.04)
    colours = series_colours(rows["model"].unique())
    order = [METRIC_NAMES["true"]] + [METRIC_NAMES[m] for m, _, _ in PAIRINGS[gap][1]]
    for col, subtask in enumerate(subtasks, start=1):
        part = rows[rows["subtask"] == subtask]
        for model, lines in part.groupby("model", sort=True, observed=True):
            lines = lines.assign(_x=lines["metric"].map(METRIC_NAMES)).set_index("_x").reindex(order).reset_index()
            fig.add_trace(go.Scatter(
                x=lines["_x"], y=lines["rank"], mode="lines+markers", name=str(model), legendgroup=str(model),
                showlegend=col == 1, line=dict(color=colours[model], width=3), marker=dict(size=11),
                customdata=lines[["rms"]].to_numpy(),
                hovertemplate=f"{model}<br>%{{x}}: rank %{{y}}<br>RMS = %{{customdata[0]:.3f}}<extra></extra>"),
                row=1, col=col)
        fig.update_xaxes(categoryorder="array", categoryarray=order, row=1, col=col)
    fig.update_yaxes(autorange="reversed", dtick=1, title_text="fairness rank", row=1, col=1)
    return _layout(fig, f"Model fairness ranking by {GAP_NAMES[gap]} and by each bias metric", 460, legend="model")


def ndcg_curves(ndcg: pd.DataFrame) -> go.Figure:
    """NDCG@N of each metric's model ranking against the true-gap ranking, per gap (Figure 4).

    ``ndcg``: :func:`audit.metrics.ndcg_table` rows; ``ndcg_lo``/``ndcg_hi`` (from
    :func:`audit.metrics.bands.ndcg_bands`) become bands.
    """
    ndcg = _escaped(ndcg)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, subplot_titles=[GAP_NAMES[g] for g in PAIRINGS])
    colours = series_colours(METRICS)
    for col, gap in enumerate(PAIRINGS, start=1):
        for metric, part in ndcg[ndcg["gap"] == gap].groupby("metric", sort=True, observed=True):
            if "ndcg_lo" in part:
                fig.add_trace(_band(part.sort_values("n"), "n", "ndcg", colours[metric], metric), row=1, col=col)
            fig.add_trace(go.Scatter(
                x=part["n"], y=part["ndcg"], mode="lines+markers", name=METRIC_NAMES[metric], legendgroup=metric,
                showlegend=col == 1, line=dict(color=colours[metric], width=2),
                hovertemplate=f"{METRIC_NAMES[metric]}<br>NDCG@%{{x}} = %{{y:.3f}}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(title_text="N (top models)", dtick=1, row=1, col=col)
    fig.update_yaxes(title_text="NDCG@N", range=[0, 1.05], row=1, col=1)
    return _layout(fig, "How well each metric's model ranking matches the true-gap ranking", 420, legend="metric")


def score_distributions(scores: pd.DataFrame, names: Mapping[str, str] | None = None) -> go.Figure:
    """Box plots of candidate scores per group, one panel per model (pointwise scores of a score table; ``names``:
    group code → display name)."""
    scores, colours = _groups(scores, "group", names)
    models = sorted(scores["model"].unique())
    fig = make_subplots(rows=1, cols=max(1, len(models)), subplot_titles=models, shared_yaxes=True)
    for col, model in enumerate(models, start=1):
        for group, part in scores[scores["model"] == model].groupby("group", sort=True, observed=True):
            fig.add_trace(go.Box(y=part["score"], name=str(group), legendgroup=str(group), showlegend=col == 1,
                                 marker_color=colours[group], boxmean=True), row=1, col=col)
    fig.update_yaxes(title_text="score", row=1, col=1)
    return _layout(fig, "Candidate scores per group", 420)


def score_shape_scatter(shape: pd.DataFrame) -> go.Figure:
    """Skewness against excess kurtosis of each group's scores, one point per (model, subtask, group), coloured by
    model (the paper's Figure 13). ``shape``: :func:`audit.metrics.shape.score_shape` rows."""
    shape = _escaped(shape)
    colours = series_colours(shape["model"].unique())
    fig = go.Figure()
    for model, part in shape.groupby("model", sort=True, observed=True):
        fig.add_trace(go.Scatter(
            x=part["skewness"], y=part["kurtosis"], mode="markers", name=str(model), marker=dict(
                color=colours[model], size=8), customdata=part[["subtask", "group", "n"]].to_numpy(dtype=object),
            hovertemplate=f"{model}<br>%{{customdata[0]}} · %{{customdata[1]}} (n = %{{customdata[2]}})<br>"
                          "skewness %{x:.2f}, kurtosis %{y:.2f}<extra></extra>"))
    fig.update_xaxes(title_text="skewness")
    fig.update_yaxes(title_text="excess kurtosis")
    return _layout(fig, "Shape of each group's score distribution", 400, legend="model")


# ---- CAIRO ---------------------------------------------------------------------------------------------------------

CAIRO_LINES = {"best_r": ("CAIRO (best combination)", "#4477AA", "solid"),
               "heldout_r": ("held-out (selected on the other prompt half)", "#228833", "dashdot"),
               "average_r": ("average over combinations", "#EE6677", "dash"),
               "original_r": ("original prompts only", "#BBBBBB", "dot")}
CAIRO_NULL = "null 95th percentile (models shuffled)"


def cairo_correlation_curves(table: pd.DataFrame, *, title: str = "") -> go.Figure:
    """Pearson r across models between two metrics' biases against the combination size m (the paper's Figure 6):
    the best combination (CAIRO), its held-out r, the average over all combinations, the original prompts alone,
    and, shaded up to its 95th percentile, the best r the search reaches with the models shuffled (``null_95``).

    ``table``: :func:`audit.cairo.search.correlation_table` rows of one dimension and metric pair (the held-out and
    null columns are drawn when present).
    """
    table = table.sort_values("m")
    fig = go.Figure()
    if "null_95" in table and table["null_95"].notna().any():
        fig.add_trace(go.Scatter(x=table["m"], y=[-1.0] * len(table), mode="lines", line=dict(width=0),
                                 showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=table["m"], y=table["null_95"], mode="lines", name=CAIRO_NULL, fill="tonexty",
                                 fillcolor="rgba(187,187,187,0.35)", line=dict(color="#999999", width=1),
                                 hovertemplate=f"{CAIRO_NULL}<br>m = %{{x}}<br>r = %{{y:.3f}}<extra></extra>"))
    for column, (name, colour, dash) in CAIRO_LINES.items():
        if column not in table:
            continue
        fig.add_trace(go.Scatter(x=table["m"], y=table[column], mode="lines+markers", name=name,
                                 line=dict(color=colour, dash=dash, width=2), marker=dict(size=7),
                                 hovertemplate=f"{name}<br>m = %{{x}}<br>r = %{{y:.3f}}<extra></extra>"))
    fig.update_xaxes(title_text="prompt sets in the combination (m)", dtick=1)
    fig.update_yaxes(title_text="Pearson r across models", range=[-1.05, 1.05])
    return _layout(fig, title or "Correlation between metrics against combination size", 420, legend="prompts")


def cairo_source_bars(sources: pd.DataFrame) -> go.Figure:
    """Prompt sets each paraphrasing source contributed to the best combination, per m and metric (Figure 7).

    ``sources``: :func:`audit.cairo.search.source_table` rows with an ``m`` column.
    """
    sources = sources.assign(metric=sources["metric"].astype(str).map(escape),
                             source=sources["source"].astype(str).map(escape))
    metrics = sorted(sources["metric"].unique())
    fig = make_subplots(rows=1, cols=max(1, len(metrics)), subplot_titles=metrics, shared_yaxes=True)
    colours = series_colours(sources["source"].unique())
    for col, metric in enumerate(metrics, start=1):
        for source, part in sources[sources["metric"] == metric].groupby("source", sort=True):
            fig.add_trace(go.Bar(x=part["m"], y=part["sets"], name=str(source), legendgroup=str(source),
                                 showlegend=col == 1, marker_color=colours[source], customdata=part[["names"]],
                                 hovertemplate=f"{source}<br>m = %{{x}}: %{{y}} set(s)<br>%{{customdata[0]}}"
                                               "<extra></extra>"), row=1, col=col)
        fig.update_xaxes(title_text="m", dtick=1, row=1, col=col)
    fig.update_yaxes(title_text="prompt sets in the best combination", row=1, col=1)
    fig.update_layout(barmode="stack")
    return _layout(fig, "Who wrote the prompt sets of the best combination", 420, legend="source")


def cairo_rankings(ranks: pd.DataFrame) -> go.Figure:
    """Each model's bias normalised by the largest, with the original prompts and with CAIRO, per metric
    (Figure 8). ``ranks``: :func:`audit.cairo.search.ranking_table` rows."""
    ranks = _escaped(ranks)
    metrics = sorted(ranks["metric"].unique())
    fig = make_subplots(rows=1, cols=max(1, len(metrics)), subplot_titles=[escape(str(m)) for m in metrics],
                        shared_yaxes=True)
    variants = list(dict.fromkeys(ranks["prompts"]))
    colours = dict(zip(variants, ("#BBBBBB", "#4477AA")))
    for col, metric in enumerate(metrics, start=1):
        for variant in variants:
            part = ranks[(ranks["metric"] == metric) & (ranks["prompts"] == variant)].sort_values("model")
            fig.add_trace(go.Bar(y=part["model"], x=part["normalised_bias"], orientation="h", name=escape(variant),
                                 legendgroup=variant, showlegend=col == 1, marker_color=colours[variant],
                                 customdata=part[["bias", "rank"]].to_numpy(),
                                 hovertemplate="%{y}<br>bias = %{customdata[0]:.4f} (normalised %{x:.2f})<br>"
                                               "rank %{customdata[1]} (1 = most biased)<extra></extra>"),
                          row=1, col=col)
        fig.update_xaxes(title_text="bias / largest bias", range=[0, 1.05], row=1, col=col)
    fig.update_layout(barmode="group")
    return _layout(fig, "Model bias with and without CAIRO", 120 + 60 * max(1, ranks["model"].nunique()),
                   legend="prompts")


def comparison_dots(gaps: pd.DataFrame, *, gap: str = "dp", title: str = "", names: Mapping[str, str] | None = None
                    ) -> go.Figure:
    """ΔGAP(B) − ΔGAP(A) per group with its paired bootstrap interval, one series per subtask.

    ``gaps``: :func:`audit.metrics.compare.compare_gaps` rows of one k; ``names``: group code → display name.
    """
    gaps = _groups(gaps, "group", names)[0]
    column = f"{gap}_diff"
    colours = series_colours(gaps["subtask"].unique())
    fig = go.Figure()
    for subtask, part in gaps.groupby("subtask", sort=True, observed=True):
        fig.add_trace(go.Scatter(
            x=part["group"], y=part[column], mode="markers", name=subtask_name(subtask), marker=dict(size=9,
                                                                                             color=colours[subtask]),
            error_y=dict(type="data", symmetric=False, array=part[f"{column}_hi"] - part[column],
                         arrayminus=part[column] - part[f"{column}_lo"]),
            hovertemplate=f"{subtask}<br>%{{x}}: %{{y:.3f}}<extra></extra>"))
    fig.add_hline(y=0, line=dict(color="#888888", dash="dot", width=1))
    fig.update_xaxes(title_text="group")
    fig.update_yaxes(title_text=f"{GAP_NAMES[gap]}(B) − {GAP_NAMES[gap]}(A)")
    fig = _layout(fig, title or f"{GAP_NAMES[gap]}(B) − {GAP_NAMES[gap]}(A)", 460)
    fig.update_layout(scattermode="group", legend_title_text="subtask")
    return fig


def planner_curve(curve: pd.DataFrame, *, target: float, k: int, title: str = "",
                  names: Mapping[str, str] | None = None) -> go.Figure:
    """CI half-width of ΔDP at k against candidates per group (log scale), one line per group, with the target.

    ``curve``: rows of :func:`audit.metrics.planner.plan` for one (model, subtask, mode); ``names``: group code →
    display name."""
    curve, colours = _groups(curve, "group", names)
    fig = go.Figure()
    for group, part in curve.sort_values("n").groupby("group", sort=True, observed=True):
        fig.add_trace(go.Scatter(x=part["n"], y=part["half_width"], mode="lines+markers", name=str(group),
                                 line=dict(color=colours[group], width=2),
                                 hovertemplate=f"{group}<br>n = %{{x}} per group<br>± %{{y:.3f}}<extra></extra>"))
    fig.add_hline(y=target, line=dict(color="#888888", dash="dash", width=1),
                  annotation_text=f"target ± {target:g}")
    fig.update_xaxes(title_text="candidates per group", type="log")
    fig.update_yaxes(title_text=f"CI half-width of ΔDP at k = {k}", rangemode="tozero")
    return _layout(fig, title or f"Planned CI half-width of ΔDP at k = {k}", 420)
