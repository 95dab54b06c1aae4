"""What every page shares: cached store tables and audits, the quota slider, error boxes and the export panel
(the sidebar that makes the view is :mod:`pages.frame.sidebar`)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from audit.design import AuditDesign
from audit.engine.tables import StoreTables
from pages.view_models.view import View
from audit.engine.metric_pass import regroup
from audit.present import exports, readable
from audit.present.tooltips import TOOLTIPS
from audit.engine.audit import Audit
from pages.view_models import address
from pages.view_models.quota_view import Quota
from audit.errors import AuditError
from audit.store.files import default_store
from audit.engine.selection import Selection
from audit.store.database import Store
from pages.view_models.report_view import bundle_settings


@st.cache_resource(show_spinner=False, max_entries=8)
def load_tables(path: str, version: tuple) -> StoreTables:
    """Every table of the store at ``path``, each read once; ``version`` keys the cache. Shared by every page and
    session, never mutated (a data cache would unpickle every table at each of the several calls of a rerun)."""
    with Store(path, create=False) as store:
        return StoreTables.read(store)


def tables(view: View) -> StoreTables:
    """The store's tables for the current view."""
    return load_tables(view.store, view.version)


def design(view: View) -> AuditDesign:
    """The stored design of the view's task."""
    return tables(view).design(view.selection.task)


def names(view: View) -> dict[str, str]:
    """Group code → display name for every group of the view's task (whole codes and each grouping's)."""
    scores = tables(view).scores
    return readable.group_names(design(view), scores.loc[scores["task"] == view.selection.task, "group"].unique())


def view_scores(view: View) -> pd.DataFrame:
    """The score rows of the view's task and mode with groups coarsened to its grouping."""
    scores = tables(view).scores
    return regroup(scores[(scores["task"] == view.selection.task) & (scores["mode"] == view.selection.mode)],
                         design(view).part(view.selection.grouping))


@st.cache_resource(show_spinner=False, max_entries=32)
def audit_of(path: str, version: tuple, selection: Selection) -> Audit:
    """The :class:`audit.engine.audit.Audit` of ``selection`` on the store (bootstrap draws kept for the bands), reading the
    metric pass of its base selection's audit, so a change of filter or of k reuses what was computed; shared by
    every page and session, never mutated (its views are computed on first use and kept inside it)."""
    base = None if selection == selection.base() else audit_of(path, version, selection.base())
    return Audit(load_tables(path, version), selection, draws=True, base=base)


def audit(view: View, selection: Selection | None = None) -> Audit:
    """The cached audit of the view's selection (or of ``selection`` on the view's store)."""
    return audit_of(view.store, view.version, selection or view.selection)


@st.cache_resource(show_spinner=False, max_entries=64)
def at_quota(view: View, k: int, method: str = "holm") -> Quota:
    """The view's audit at quota k with p-values adjusted by ``method`` (rows flagged for label mass); shared by
    every page, never mutated."""
    return Quota.of(audit(view, replace(view.selection, adjust=method)), k)


def metric_view(current: View, slider_key: str) -> tuple[pd.DataFrame, int]:
    """The metric table of ``current`` for every k (unfiltered, shared: never mutate it) and the quota k of the
    page's slider; stops the page with the reason when there is nothing to show."""
    try:
        with st.spinner("Computing metrics…"):
            found = audit(current, current.selection.base()).rows
    except AuditError as exc:
        error("No metrics for this selection:", exc, st.warning)
        st.stop()
    if found.skipped:
        with st.expander(f"{len(found.skipped)} model · subtask combination(s) left out"):
            st.text("\n".join(found.skipped))
    note = readable.low_mass_note(audit(current).label_mass, current.selection)
    if note:
        st.info(note)
    pool = int(found.table["k"].max())
    return found.table, quota_slider(pool, slider_key, current)


def error(title: str, exc: Exception, box: Callable[[str], Any] = st.error) -> None:
    """A box (``st.error`` unless told) with ``title`` and the exact message (shown as code: escaped, copyable,
    long lines wrapped so nothing is cut at the box's edge)."""
    box(title)
    st.code(str(exc), language=None, wrap_lines=True)


#: what the pages say in place of the quota slider where no quota moves the selection
NO_QUOTA_WORDS = ("these systems are judged on the decisions their logs record (a 0/1 log's selections, a score log's "
                  "scores above its median), so every number below is the same at every k.")


def quota_slider(pool: int, key: str, view: View) -> int:
    """The quota k slider, 1 … pool size − 1 (at k = pool size everyone is selected and every gap is 0 by
    construction); a line saying there is no quota, and k = 1, where the view's audit is quota-free. Each task of
    ``view`` keeps its own k, shared by every page: it opens at the page address's ``k``
    when the address names the task, else at the design's quota, and goes back into the address."""
    top = max(1, pool - 1)
    if audit(view).quota_free:
        st.caption(f"No quota: {NO_QUOTA_WORDS}")
        return 1
    if top == 1:
        st.caption(f"quota k = 1: the only meaningful quota with pools of {pool} candidates")
        return 1
    address.start_quota(st.session_state, key, view.selection.task, design(view).audited_quota()[0], top)
    k = st.slider("quota k (candidates selected per pool)", 1, top, key=key, help=TOOLTIPS["k"].format(pool=pool))
    address.keep_quota(st.session_state, st.query_params, view.selection.task, k)
    return k


def existing_store(missing: str) -> str:
    """The sidebar's store path, or stop the page with ``missing`` (an info line) when no store is there yet."""
    path = st.session_state.get("store_path") or default_store()
    if not Path(path).is_file():
        st.info(missing)
        st.stop()
    return path


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
                  current: View, more: Callable[[], dict[str, pd.DataFrame]] = dict, **settings: object) -> None:
    """One-click zip of the page's charts (every format), tables (``more``: tables built on the click) and
    settings (fingerprints, k, reference)."""
    payload = bundle_settings(current, tables(current).scores, page, pool=audit(current).pool, **settings)
    st.download_button("Report bundle (zip)",
                       data=lambda: exports.report_bundle(figures, {**tables_, **more()}, payload),
                       file_name=f"{page}-report.zip", mime=exports.MIME["zip"], on_click="ignore",
                       key=f"bundle_{page}", type="primary", icon=":material/folder_zip:")
