"""What every page shares: the sidebar view, cached store tables and metric tables, and the export panel."""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit import report
from audit.errors import AuditError
from audit.metrics import MetricEngine
from audit.metrics.pairwise import drop_unreliable
from audit.metrics.presets import PRESETS
from audit.paths import DEMO_STORE
from audit.results import pair_table, score_table
from audit.store import Store
from pages.shared import views

DEFAULT_K = 2
_SIDEBAR_DONE = "_sidebar_rendered"


def default_store() -> str:
    """``$AUDIT_DB`` if set, else the shipped demo store."""
    return os.environ.get("AUDIT_DB") or str(DEMO_STORE)


def store_version(path: str) -> tuple:
    """(mtime, size) of the store file and its WAL: changes whenever results are written."""
    stats = []
    for name in (path, path + "-wal"):
        try:
            stat = os.stat(name)
            stats.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            stats.append(None)
    return tuple(stats)


@st.cache_data(show_spinner=False, max_entries=8)
def load_tables(path: str, version: tuple) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(scores, pairs, store summary, models) of the store at ``path``; ``version`` keys the cache."""
    with Store(path, create=False) as store:
        return score_table(store), pair_table(store), views.store_summary(store), views.model_table(store.models())


def tables(view: views.View) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The store's tables for the current view."""
    return load_tables(view.store, view.version)


@st.cache_data(show_spinner="Computing metrics…", max_entries=16)
def metric_rows(path: str, version: tuple, mode: str, grouping: str, reference: str, ci: float,
                n_boot: int, preset: str = "default",
                max_inconsistent: float | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The metric table of one mode and grouping for every quota k (1 … pool size), with bootstrap bounds, and the
    (model, subtask) keys left out with the reason (e.g. a partial run lacking a group or a qualified candidate, or a
    pairwise model above ``max_inconsistent`` inconsistent pairs)."""
    scores, pairs, _, _ = load_tables(path, version)
    scores = views.regroup(scores[scores["mode"] == mode], grouping)
    pairs = views.regroup(pairs[pairs["mode"] == mode], grouping, ("group_a", "group_b"))
    frames, skipped = [], []
    if max_inconsistent is not None and len(pairs):
        scores, dropped = drop_unreliable(scores, pairs, max_inconsistent=max_inconsistent)
        skipped += [f"{r.model} · {r.task}: excluded, {r.inconsistent:.0%} of {r.pairs} pairs inconsistent "
                    f"(> {max_inconsistent:.0%})" for r in dropped.itertuples(index=False)]
    for (model, task, subtask), rows in scores.groupby(["model", "task", "subtask"], sort=True):
        try:
            engine = MetricEngine(rows, reference=reference, pool=views.MODES[mode],
                                  pairs=pairs if len(pairs) else None, ci=ci, n_boot=n_boot, preset=preset)
            frames.append(engine.table(range(1, min(engine.pool_sizes.values()) + 1)))
        except AuditError as exc:
            skipped.append(f"{model} · {task}/{subtask}: {exc}")
    if not frames:
        raise AuditError("no (model, subtask) has complete results; " + "; ".join(skipped))
    table = pd.concat(frames, ignore_index=True)
    return table[table["k"] <= table.groupby(["model", "task", "subtask"])["k"].transform("max").min()], skipped


def metrics(view: views.View) -> pd.DataFrame | None:
    """The current view's metric table for every k (unfiltered), or None after showing why there is none."""
    try:
        table, skipped = metric_rows(view.store, view.version, view.mode, view.grouping, view.reference, view.ci,
                                     view.n_boot, view.preset, view.max_inconsistent)
    except AuditError as exc:
        st.warning("No metrics for this selection:")
        st.code(str(exc), language=None)
        return None
    if skipped:
        with st.expander(f"{len(skipped)} model · subtask combination(s) left out"):
            for line in skipped:
                st.text(line)
    return table


def metric_view(slider_key: str) -> tuple[views.View, pd.DataFrame, int]:
    """The current view, its metric table for every k, and the quota k of the page's slider; stops the page when
    there is nothing to show."""
    current = need_view()
    table = metrics(current)
    if table is None:
        st.stop()
    return current, table, quota_slider(table, key=slider_key)


def error(title: str, exc: Exception) -> None:
    """An error box with ``title`` and the exact message (shown as code: escaped, copyable)."""
    st.error(title)
    st.code(str(exc), language=None)


def quota_slider(table: pd.DataFrame, key: str) -> int:
    """The quota k slider (1 … pool size); its value is shared by every page through ``quota``."""
    top = int(table["k"].max())
    value = min(st.session_state.get("quota", DEFAULT_K), top)
    k = st.slider("quota k (candidates selected per pool)", 1, top, value, key=key,
                  help="Each pool holds one candidate per group (pointwise) or a recorded pairwise pool; the k "
                       "best-scored are selected.")
    st.session_state["quota"] = k
    return k


def configure() -> None:
    """Page configuration shared by every page."""
    st.set_page_config(page_title="Allocation audit", page_icon=":material/balance:", layout="wide")


def page() -> views.View | None:
    """Call first on every page: the view the sidebar selected (None if the store has nothing to show).

    ``app.py`` renders the sidebar before the page, so its widgets keep their state across pages. When Streamlit runs
    a page file without ``app.py`` (its ``pages/``-folder fallback, e.g. a deep link as a server's first request, or
    AppTest after a page switch), the page renders the sidebar itself.
    """
    if not st.session_state.pop(_SIDEBAR_DONE, False):
        configure()
        sidebar()
    return st.session_state.get("view")


def entry_sidebar() -> None:
    """The sidebar as ``app.py`` renders it before running the page (the page then skips its own)."""
    sidebar()
    st.session_state[_SIDEBAR_DONE] = True


def sidebar() -> None:
    """Store path and filters; stores the resulting :class:`views.View` in the session state."""
    st.session_state["view"] = None
    with st.sidebar:
        st.header("Result store")
        path = st.text_input("store file", value=default_store(), key="store_path",
                             help="SQLite result store; default $AUDIT_DB or the shipped demo store.")
        if Path(path).is_dir():
            st.error("This path is a folder: give the path of a store file (e.g. results.db).")
            return
        if not Path(path).is_file():
            st.info("This store does not exist yet: run an audit to create it.")
            return
        try:
            scores, _, _, _ = load_tables(path, store_version(path))
        except AuditError as exc:
            error("Cannot read the store:", exc)
            return
        if scores.empty:
            st.info("The store holds no results yet: run an audit.")
            return
        st.header("View")
        modes = [m for m in views.MODES if m in set(scores["mode"])]
        mode = st.selectbox("scoring mode", modes, key="mode")
        rows = scores[scores["mode"] == mode]
        codes = sorted(rows["group"].unique())
        grouping = st.radio("grouping", views.groupable(codes), key="grouping", horizontal=True)
        groups = sorted({views.regroup_code(c, grouping) for c in codes})
        default_ref = views.regroup_code("W_M", grouping) if "W_M" in codes else groups[0]
        reference = st.selectbox("reference group", groups, index=groups.index(default_ref), key=f"ref_{grouping}")
        models = sorted(rows["model"].unique())
        subtasks = sorted(rows["subtask"].unique())
        chosen_models = st.multiselect("models", models, default=models, key=f"models_{mode}")
        chosen_subtasks = st.multiselect("subtasks", subtasks, default=subtasks, key=f"subtasks_{mode}")
        others = [g for g in groups if g != reference]
        chosen_groups = st.multiselect("groups shown", others, default=others, key=f"groups_{grouping}_{reference}")
        with st.expander("confidence bands"):
            ci = st.select_slider("level", [0.8, 0.9, 0.95, 0.99], value=0.95, key="ci")
            n_boot = st.select_slider("bootstrap replicates", [100, 200, 500, 1000], value=200, key="n_boot")
        with st.expander("paper settings"):
            preset = st.radio("estimators", list(PRESETS), key="preset", horizontal=True,
                              help="; ".join(f"{p.name}: {p.description}" for p in PRESETS.values()))
            cut = st.radio("leave out pairwise models with more inconsistent pairs than", list(views.INCONSISTENT),
                           key="max_inconsistent", horizontal=True, disabled=mode == "pointwise")
    st.session_state["view"] = views.View(
        store=path, version=store_version(path), mode=mode, grouping=grouping, reference=reference,
        models=tuple(chosen_models), subtasks=tuple(chosen_subtasks), groups=tuple(chosen_groups), ci=ci,
        n_boot=n_boot, preset=preset, max_inconsistent=None if mode == "pointwise" else views.INCONSISTENT[cut])


def need_view() -> views.View:
    """The current view (see :func:`page`), or stop the page with a hint when the store holds nothing to show."""
    current = page()
    if current is None:
        st.info("Nothing to show yet: choose a result store with results in the sidebar, or run an audit.")
        st.stop()
    return current


def chart(fig: go.Figure, table: pd.DataFrame, name: str) -> None:
    """Show ``fig`` with download buttons for PNG, SVG, PDF, HTML and its table as CSV (built on click)."""
    st.plotly_chart(fig, width="stretch", key=f"chart_{name}")
    columns = st.columns(6)
    for column, fmt in zip(columns, report.FIGURE_FORMATS):
        column.download_button(fmt.upper(), data=lambda fmt=fmt: report.figure_bytes(fig, fmt),
                               file_name=f"{name}.{fmt}", mime=report.MIME[fmt], on_click="ignore",
                               key=f"dl_{name}_{fmt}", icon=":material/download:")
    columns[4].download_button("CSV", data=lambda: report.table_bytes(table), file_name=f"{name}.csv",
                               mime=report.MIME["csv"], on_click="ignore", key=f"dl_{name}_csv",
                               icon=":material/download:")


def bundle_button(page: str, figures: dict[str, go.Figure], tables_: dict[str, pd.DataFrame],
                  current: views.View, **settings: object) -> None:
    """One-click zip of the page's charts (every format), tables and settings (fingerprints, k, reference)."""
    scores = tables(current)[0]
    payload = {**current.settings(), **settings, "page": page,
               "model_fingerprints": views.fingerprints(scores, current.models),
               "generated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    st.download_button("Report bundle (zip)", data=lambda: report.report_bundle(figures, tables_, payload),
                       file_name=f"{page}-report.zip", mime=report.MIME["zip"], on_click="ignore",
                       key=f"bundle_{page}", type="primary", icon=":material/folder_zip:")
