"""What every page shares: the sidebar view, cached store tables and audits, and the export panel."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit import views
from audit.present import exports, readable
from audit.present.tooltips import TOOLTIPS
from audit.audit import Audit
from pages.view_models import address
from pages.view_models.quota_view import Quota
from audit.errors import AuditError
from audit.formatting import subtask_name
from audit.metrics.presets import PRESETS
from audit.store_files import default_store, is_demo, store_version, user_store
from audit.selection import N_BOOT, Selection
from audit.store import Store
from audit.tasks.recorded import mode_name
from pages.view_models.report_view import bundle_settings

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


def design(view: views.View) -> views.AuditDesign:
    """The stored design of the view's task."""
    return tables(view).design(view.selection.task)


def names(view: views.View) -> dict[str, str]:
    """Group code → display name for every group of the view's task (whole codes and each grouping's)."""
    scores = tables(view).scores
    return readable.group_names(design(view), scores.loc[scores["task"] == view.selection.task, "group"].unique())


def view_scores(view: views.View) -> pd.DataFrame:
    """The score rows of the view's task and mode with groups coarsened to its grouping."""
    scores = tables(view).scores
    return views.regroup(scores[(scores["task"] == view.selection.task) & (scores["mode"] == view.selection.mode)],
                         design(view).part(view.selection.grouping))


@st.cache_resource(show_spinner=False, max_entries=32)
def audit_of(path: str, version: tuple, selection: Selection) -> Audit:
    """The :class:`audit.audit.Audit` of ``selection`` on the store (bootstrap draws kept for the bands), reading the
    metric pass of its base selection's audit, so a change of filter or of k reuses what was computed; shared by
    every page and session, never mutated (its views are computed on first use and kept inside it)."""
    base = None if selection == selection.base() else audit_of(path, version, selection.base())
    return Audit(load_tables(path, version), selection, draws=True, base=base)


def audit(view: views.View, selection: Selection | None = None) -> Audit:
    """The cached audit of the view's selection (or of ``selection`` on the view's store)."""
    return audit_of(view.store, view.version, selection or view.selection)


@st.cache_resource(show_spinner=False, max_entries=64)
def at_quota(view: views.View, k: int, method: str = "holm") -> Quota:
    """The view's audit at quota k with p-values adjusted by ``method`` (rows flagged for label mass); shared by
    every page, never mutated."""
    return Quota.of(audit(view, replace(view.selection, adjust=method)), k, tables(view).scores)


def metric_view(slider_key: str) -> tuple[views.View, pd.DataFrame, int]:
    """The current view, its metric table for every k (unfiltered, shared: never mutate it), and the quota k of the
    page's slider; stops the page with the reason when there is nothing to show."""
    current = need_view()
    try:
        with st.spinner("Computing metrics…"):
            found = audit(current, current.selection.base()).rows
    except AuditError as exc:
        error("No metrics for this selection:", exc, st.warning)
        st.stop()
    if found.skipped:
        with st.expander(f"{len(found.skipped)} model · subtask combination(s) left out"):
            st.text("\n".join(found.skipped))
    note = readable.low_mass_note(views.label_mass(tables(current).scores, current.selection.task), current)
    if note:
        st.info(note)
    pool = int(found.table["k"].max())
    return current, found.table, quota_slider(pool, slider_key, current)


def error(title: str, exc: Exception, box: Callable[[str], Any] = st.error) -> None:
    """A box (``st.error`` unless told) with ``title`` and the exact message (shown as code: escaped, copyable,
    long lines wrapped so nothing is cut at the box's edge)."""
    box(title)
    st.code(str(exc), language=None, wrap_lines=True)


def quota_slider(pool: int, key: str, view: views.View) -> int:
    """The quota k slider, 1 … pool size − 1 (at k = pool size everyone is selected and every gap is 0 by
    construction). Each task of ``view`` keeps its own k, shared by every page: it opens at the page address's ``k``
    when the address names the task, else at the design's quota, and goes back into the address."""
    top = max(1, pool - 1)
    if top == 1:
        st.caption(f"quota k = 1: the only meaningful quota with pools of {pool} candidates")
        return 1
    address.start_quota(st.session_state, key, view.selection.task, design(view).audited_quota()[0], top)
    k = st.slider("quota k (candidates selected per pool)", 1, top, key=key, help=TOOLTIPS["k"].format(pool=pool))
    address.keep_quota(st.session_state, st.query_params, view.selection.task, k)
    return k


def configure() -> None:
    """Page configuration shared by every page."""
    st.set_page_config(page_title="Allocation audit", page_icon=":material/balance:", layout="wide")


def page() -> views.View | None:
    """Call first on every page: the view the sidebar selected (None if the store has nothing to show). ``app.py``
    renders the sidebar before the page (so its widgets keep their state); a page run without it (Streamlit's
    ``pages/`` fallback, AppTest after a page switch) renders the sidebar itself."""
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
    st.session_state.setdefault(address.OPENED, st.query_params.to_dict())
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
    if st.session_state.get("task") not in stored.tasks():  # a reload: the address's task; another store: its first
        st.session_state["task"] = address.opened_task(st.session_state, stored.tasks()) or stored.tasks()[0]
    task = st.selectbox("task", stored.tasks(), key="task",
                        help="Each task is audited with its own stored design; a store opens on its recorded systems.")
    st.query_params["task"] = task
    design = stored.design(task)
    rows = stored.scores[stored.scores["task"] == task]
    present = set(rows["mode"].unique())
    mode = st.selectbox("scoring mode", [m for m in views.MODES if m in present], key=f"mode_{task}",
                        format_func=lambda m: mode_name(design, m))
    rows = rows[rows["mode"] == mode]
    grouping = st.radio("grouping", list(design.groupings), key=f"grouping_{task}", horizontal=True,
                        help=TOOLTIPS["grouping"])
    groups = sorted({design.category(c, grouping) for c in rows["group"].unique()})
    stored_ref = design.category(design.reference, grouping)
    reference = st.selectbox("reference group", groups, index=groups.index(stored_ref) if stored_ref in groups else 0,
                             key=f"ref_{task}_{grouping}", format_func=design.display_name,
                             help=TOOLTIPS["reference"].format(stored=design.display_name(stored_ref)))
    pool = views.pool_of(design, mode)
    st.caption(f"pool design: {pool} · qualified: {design.qualification}")
    models, subtasks = sorted(rows["model"].unique()), sorted(rows["subtask"].unique())
    chosen_models = st.multiselect("models", models, default=models, key=f"models_{task}_{mode}",
                                   help=TOOLTIPS["models"])
    chosen_subtasks = st.multiselect("subtasks", subtasks, default=subtasks, key=f"subtasks_{task}_{mode}",
                                     format_func=subtask_name, help=TOOLTIPS["subtasks"])
    others = [g for g in groups if g != reference]
    chosen_groups = st.multiselect("groups shown", others, default=others, key=f"groups_{task}_{grouping}_{reference}",
                                   format_func=design.display_name)
    with st.expander("confidence bands"):
        ci = st.select_slider("level", [0.8, 0.9, 0.95, 0.99], value=0.95, key="ci", help=TOOLTIPS["ci"])
        n_boot = st.select_slider("bootstrap replicates", [100, 200, 500, 1000], value=N_BOOT, key="n_boot",
                                  help=TOOLTIPS["n_boot"].format(n_boot=N_BOOT))
    with st.expander("paper settings"):
        preset = st.radio("estimators", list(PRESETS), key="preset", horizontal=True,
                          help="; ".join(f"{p.name}: {p.description}" for p in PRESETS.values()))
        cut = st.radio("leave out pairwise models with more inconsistent pairs than", list(views.INCONSISTENT),
                       key="max_inconsistent", horizontal=True, disabled=mode == "pointwise")
    selection = Selection(task, mode, models=tuple(chosen_models), subtasks=tuple(chosen_subtasks),
                          groups=tuple(chosen_groups), grouping=grouping, reference=reference, preset=preset,
                          max_inconsistent=None if mode == "pointwise" else views.INCONSISTENT[cut], ci=ci,
                          n_boot=n_boot)
    return views.View(store=path, version=store_version(path), selection=selection)


def existing_store(missing: str) -> str:
    """The sidebar's store path, or stop the page with ``missing`` (an info line) when no store is there yet."""
    path = st.session_state.get("store_path") or default_store()
    if not Path(path).is_file():
        st.info(missing)
        st.stop()
    return path


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
                  current: views.View, more: Callable[[], dict[str, pd.DataFrame]] = dict, **settings: object) -> None:
    """One-click zip of the page's charts (every format), tables (``more``: tables built on the click) and
    settings (fingerprints, k, reference)."""
    payload = bundle_settings(current, tables(current).scores, page, pool=audit(current).pool, **settings)
    st.download_button("Report bundle (zip)",
                       data=lambda: exports.report_bundle(figures, {**tables_, **more()}, payload),
                       file_name=f"{page}-report.zip", mime=exports.MIME["zip"], on_click="ignore",
                       key=f"bundle_{page}", type="primary", icon=":material/folder_zip:")
