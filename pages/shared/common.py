"""What every page shares: the sidebar view, cached store tables and metric tables, and the export panel."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit import audit_result, exports, views
from audit.errors import AuditError
from audit.metrics.suite import P_COLUMNS
from audit.metrics.presets import PRESETS
# the store-file helpers live in audit.store_files; pages reach them here (run_store: the Run page)
from audit.store_files import default_store, is_demo, run_store, store_version, user_store  # noqa: F401
from audit.selection import Selection
from audit.store import Store

DEFAULT_K = 2
_SIDEBAR_DONE = "_sidebar_rendered"
NEXT = "_next_"  # prefix of a widget value to set before the widget is drawn on the next run (e.g. after a run)


def set_next(key: str, value: object) -> None:
    """Give the widget ``key`` this value when it is next drawn (a drawn widget's value cannot be set)."""
    st.session_state[NEXT + key] = value


@st.cache_data(show_spinner=False, max_entries=8)
def load_tables(path: str, version: tuple) -> views.StoreTables:
    """Every table of the store at ``path``, each read once; ``version`` keys the cache."""
    with Store(path, create=False) as store:
        return views.StoreTables.read(store)


def tables(view: views.View) -> views.StoreTables:
    """The store's tables for the current view."""
    return load_tables(view.store, view.version)


def task_scores(path: str, version: tuple, task: str, mode: str, grouping: str) -> pd.DataFrame:
    """The score rows of one task and mode with groups coarsened to ``grouping`` of the task's design."""
    stored = load_tables(path, version)
    rows = stored.scores[(stored.scores["task"] == task) & (stored.scores["mode"] == mode)]
    return views.regroup(rows, stored.design(task).groupings[grouping])


def view_scores(view: views.View) -> pd.DataFrame:
    """:func:`task_scores` of the current view."""
    return task_scores(view.store, view.version, view.task, view.mode, view.grouping)


@st.cache_resource(show_spinner="Computing metrics…", max_entries=8)
def base_rows(path: str, version: tuple, base: Selection) -> views.MetricRows:
    """The metric pass of a base selection (every model, subtask and k, with permutation p-values and bootstrap
    draws; see :func:`audit.audit_result.base_rows`); shared, never mutated (the draws are large: a cached copy per
    rerun would cost more than the slider's budget)."""
    return audit_result.base_rows(load_tables(path, version), base, keep_draws=True)


def results(view: views.View) -> views.MetricRows:
    """:func:`base_rows` of the current view."""
    return base_rows(view.store, view.version, view.selection().base())


def audit(view: views.View, adjust: str = "holm") -> audit_result.AuditResult:
    """The audit of the current view (:func:`audit.audit_result.compute`, the computation of the CLI and the
    report), from the cached metric pass."""
    return audit_result.compute(tables(view), view.selection(adjust), rows=results(view), with_impact=False)


@st.cache_data(show_spinner=False, max_entries=16)
def metric_rows(path: str, version: tuple, base: Selection) -> tuple[pd.DataFrame, list[str]]:
    """The metric table of :func:`base_rows` without p-values, with label-mass flags, and the keys left out."""
    found = base_rows(path, version, base)
    table = found.table.drop(columns=list(P_COLUMNS))
    return with_label_mass(table, load_tables(path, version).scores, base.task, base.mode), list(found.skipped)


def with_label_mass(table: pd.DataFrame, scores: pd.DataFrame, task: str, mode: str) -> pd.DataFrame:
    """``table`` with ``low_label_mass``: the model's pointwise scores put little probability on the labels."""
    low = views.label_mass(scores, task).query("low")["model"]
    return table.assign(low_label_mass=table["model"].isin(low) & (mode == "pointwise"))


def metrics(view: views.View) -> pd.DataFrame | None:
    """The current view's metric table for every k (unfiltered), or None after showing why there is none."""
    try:
        table, skipped = metric_rows(view.store, view.version, view.selection().base())
    except AuditError as exc:
        st.warning("No metrics for this selection:")
        st.code(str(exc), language=None)
        return None
    if skipped:
        with st.expander(f"{len(skipped)} model · subtask combination(s) left out"):
            for line in skipped:
                st.text(line)
    low = sorted(set(table.loc[table["low_label_mass"] & table["model"].isin(view.models), "model"]))
    if low:
        st.info(f"Marked ✕ in the charts: {', '.join(low)} put less than {views.LOW_LABEL_MASS:.0%} of the next-token "
                "probability on the labels on average, so their scores are mostly renormalised noise.")
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
    """The quota k slider, 1 … pool size − 1 (at k = pool size everyone is selected and every gap is 0 by
    construction); its value is shared by every page through ``quota``."""
    pool = int(table["k"].max())
    top = max(1, pool - 1)
    value = max(1, min(st.session_state.get("quota", DEFAULT_K), top))
    if top == 1:
        st.caption(f"quota k = 1: the only meaningful quota with pools of {pool} candidates")
        k = 1
    else:
        k = st.slider("quota k (candidates selected per pool)", 1, top, value, key=key,
                      help=f"Pools of {pool} candidates follow the task's design (shown in the sidebar); the k "
                           "best-scored of each pool are selected. k stops below the pool size: selecting everyone "
                           "leaves no gap to measure.")
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
    """Store path, task and filters; stores the resulting :class:`views.View` in the session state."""
    st.session_state["view"] = None
    with st.sidebar:
        st.header("Result store")
        path = store_input()
        if Path(path).is_dir():
            st.error("This path is a folder: give the path of a store file (e.g. results.db).")
            return
        if not Path(path).is_file():
            st.info("This store does not exist yet: run an audit to create it.")
            return
        try:
            stored = load_tables(path, store_version(path))
        except AuditError as exc:
            error("Cannot read the store:", exc)
            return
        if stored.scores.empty:
            st.info("The store holds no results yet: run an audit.")
            return
        st.header("View")
        st.session_state["view"] = view_inputs(path, stored)


def store_input() -> str:
    """The store path widget; its value survives a reload as the ``store`` query parameter."""
    if NEXT + "task" in st.session_state:
        st.session_state["task"] = st.session_state.pop(NEXT + "task")
    st.session_state["store_path"] = (st.session_state.pop(NEXT + "store_path", None)
                                      or st.session_state.get("store_path") or st.query_params.get("store")
                                      or default_store())
    path = st.text_input("store file", key="store_path",
                         help="SQLite result store; default $AUDIT_DB or the shipped demo store.")
    st.query_params["store"] = path
    if is_demo(path):
        st.caption(f"The shipped demo store is only read: runs started here go to your own store, "
                   f"`{user_store()}` (a copy of the demo, made on the first run).")
    return path


def view_inputs(path: str, stored: views.StoreTables) -> views.View:
    """Task, mode, grouping, reference, filters and bootstrap settings; every choice comes from the task's design."""
    task = st.selectbox("task", stored.tasks(), key="task", help="Each task is audited with its own stored design.")
    design = stored.design(task)
    rows = stored.scores[stored.scores["task"] == task]
    mode = st.selectbox("scoring mode", [m for m in views.MODES if m in set(rows["mode"])], key=f"mode_{task}")
    rows = rows[rows["mode"] == mode]
    grouping = st.radio("grouping", list(design.groupings), key=f"grouping_{task}", horizontal=True)
    groups = sorted({design.category(c, grouping) for c in rows["group"].unique()})
    stored_ref = design.category(design.reference, grouping)
    reference = st.selectbox("reference group", groups, index=groups.index(stored_ref) if stored_ref in groups else 0,
                             key=f"ref_{task}_{grouping}", format_func=lambda code: _named(design, code),
                             help=f"The task's stored reference group is {_named(design, stored_ref)}.")
    pool = views.pool_of(design, mode)
    st.caption(f"pool design: {pool} · qualified: {design.qualification}")
    models, subtasks = sorted(rows["model"].unique()), sorted(rows["subtask"].unique())
    chosen_models = st.multiselect("models", models, default=models, key=f"models_{task}_{mode}")
    chosen_subtasks = st.multiselect("subtasks", subtasks, default=subtasks, key=f"subtasks_{task}_{mode}")
    others = [g for g in groups if g != reference]
    chosen_groups = st.multiselect("groups shown", others, default=others, key=f"groups_{task}_{grouping}_{reference}")
    with st.expander("confidence bands"):
        ci = st.select_slider("level", [0.8, 0.9, 0.95, 0.99], value=0.95, key="ci")
        n_boot = st.select_slider("bootstrap replicates", [100, 200, 500, 1000], value=200, key="n_boot")
    with st.expander("paper settings"):
        preset = st.radio("estimators", list(PRESETS), key="preset", horizontal=True,
                          help="; ".join(f"{p.name}: {p.description}" for p in PRESETS.values()))
        cut = st.radio("leave out pairwise models with more inconsistent pairs than", list(views.INCONSISTENT),
                       key="max_inconsistent", horizontal=True, disabled=mode == "pointwise")
    return views.View(store=path, version=store_version(path), task=task, mode=mode, grouping=grouping,
                      reference=reference, pool=str(pool), models=tuple(chosen_models), subtasks=tuple(chosen_subtasks),
                      groups=tuple(chosen_groups), ci=ci, n_boot=n_boot, preset=preset,
                      max_inconsistent=None if mode == "pointwise" else views.INCONSISTENT[cut])


def _named(design: views.AuditDesign, code: str) -> str:
    """``code`` with its declared name, e.g. ``B_F (Black women)``."""
    name = design.display_name(code)
    return code if name == code else f"{code} ({name})"


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
    for column, fmt in zip(columns, exports.FIGURE_FORMATS):
        column.download_button(fmt.upper(), data=lambda fmt=fmt: exports.figure_bytes(fig, fmt),
                               file_name=f"{name}.{fmt}", mime=exports.MIME[fmt], on_click="ignore",
                               key=f"dl_{name}_{fmt}", icon=":material/download:")
    columns[4].download_button("CSV", data=lambda: exports.table_bytes(table), file_name=f"{name}.csv",
                               mime=exports.MIME["csv"], on_click="ignore", key=f"dl_{name}_csv",
                               icon=":material/download:")


def bundle_button(page: str, figures: dict[str, go.Figure], tables_: dict[str, pd.DataFrame],
                  current: views.View, **settings: object) -> None:
    """One-click zip of the page's charts (every format), tables and settings (fingerprints, k, reference)."""
    scores = tables(current).scores
    payload = {**current.settings(), **settings, "page": page,
               "model_fingerprints": views.fingerprints(scores, current.models),
               "generated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    st.download_button("Report bundle (zip)", data=lambda: exports.report_bundle(figures, tables_, payload),
                       file_name=f"{page}-report.zip", mime=exports.MIME["zip"], on_click="ignore",
                       key=f"bundle_{page}", type="primary", icon=":material/folder_zip:")
