"""The app's frame: the sidebar (store, task, filters) that makes the :class:`audit.engine.View` every page reads."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.view_models.view import INCONSISTENT, View
from audit.engine.metric_pass import pool_of
from audit.engine.tables import StoreTables
from audit.enums import DEFAULT_FAMILY, Family, Mode, SCORED
from audit.errors import AuditError
from audit.formatting import subtask_name
from audit.engine.choices import PRESETS
from audit.present.tooltips import TOOLTIPS
from audit.engine.selection import N_BOOT, Selection
from audit.store.files import default_store, is_demo, store_version, user_store
from audit.tasks.recorded import mode_name
from pages.shared.common import error, load_tables
from pages.view_models import address

_SIDEBAR_DONE = "_sidebar_rendered"
#: session key of the verdict's multiple-testing family (plain state: it outlives the Overview's widget)
_FAMILY = "_verdict_family"
NEXT = "_next_"  # prefix of a widget value to set before the widget is drawn on the next run (e.g. after a run)


def set_next(key: str, value: object) -> None:
    """Give the widget ``key`` this value when it is next drawn (a drawn widget's value cannot be set)."""
    st.session_state[NEXT + key] = value


def keep_family(family: Family) -> None:
    """The verdict's family chosen on the Overview (its widget's callback): the selection's family from the next
    run of the sidebar on, on every page."""
    st.session_state[_FAMILY] = family


def configure() -> None:
    """Page configuration shared by every page."""
    st.set_page_config(page_title="Allocation audit", page_icon=":material/balance:", layout="wide")


def page() -> View | None:
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
    """Store path, task and filters; stores the resulting :class:`View` in the session state."""
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


def view_inputs(path: str, stored: StoreTables) -> View:
    """Task, mode, grouping, reference, filters and bootstrap settings; every choice comes from the task's design."""
    if st.session_state.get("task") not in stored.tasks():  # a reload: the address's task; another store: its first
        st.session_state["task"] = address.opened_task(st.session_state, stored.tasks()) or stored.tasks()[0]
    task = st.selectbox("task", stored.tasks(), key="task",
                        help="Each task is audited with its own stored design; a store opens on its recorded systems.")
    st.query_params["task"] = task
    design = stored.design(task)
    rows = stored.scores[stored.scores["task"] == task]
    present = set(rows["mode"].unique())
    mode = st.selectbox("scoring mode", [m for m in SCORED if m in present], key=f"mode_{task}",
                        format_func=lambda m: mode_name(design, m))
    rows = rows[rows["mode"] == mode]
    grouping = st.radio("grouping", list(design.groupings), key=f"grouping_{task}", horizontal=True,
                        help=TOOLTIPS["grouping"])
    groups = sorted({design.category(c, grouping) for c in rows["group"].unique()})
    stored_ref = design.category(design.reference, grouping)
    reference = st.selectbox("reference group", groups, index=groups.index(stored_ref) if stored_ref in groups else 0,
                             key=f"ref_{task}_{grouping}", format_func=design.display_name,
                             help=TOOLTIPS["reference"].format(stored=design.display_name(stored_ref)))
    pool = pool_of(design, mode)
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
        cut = st.radio("leave out pairwise models with more inconsistent pairs than", list(INCONSISTENT),
                       key="max_inconsistent", horizontal=True, disabled=mode == Mode.POINTWISE)
    selection = Selection(task, mode, models=tuple(chosen_models), subtasks=tuple(chosen_subtasks),
                          groups=tuple(chosen_groups), grouping=grouping, reference=reference, preset=preset,
                          max_inconsistent=None if mode == Mode.POINTWISE else INCONSISTENT[cut], ci=ci,
                          n_boot=n_boot, family=st.session_state.get(_FAMILY, DEFAULT_FAMILY))
    return View(store=path, version=store_version(path), selection=selection)



def need_view() -> View:
    """The current view (see :func:`page`), or stop the page with a hint when the store holds nothing to show."""
    current = page()
    if current is None:
        st.info("Nothing to show yet: choose a result store with results in the sidebar, or run an audit.")
        st.stop()
    return current


