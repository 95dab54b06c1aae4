"""Monitor: the sidebar's task's dated decision log watched look by look (audit/engine/monitor.py), alarms first, then
per category the impact ratio over time with its anytime-valid band, the recent window and the threshold. The sidebar's
systems, subtasks and grouping choose the pairs shown; a task without dated decisions hands over to one with them."""

import pandas as pd
import streamlit as st

from audit.enums import DEFAULT_FAMILY, Family
from audit.errors import AuditError
from audit.engine.selection import Selection
from audit.formatting import md_text
from audit.engine.monitor import PERIODS, MonitorSettings, Monitoring, monitor_table
from audit.present import monitor_chart
from audit.present.tooltips import TOOLTIPS
from audit.store.database import Store
from audit.store.files import store_version
from pages.frame import sidebar
from pages.shared import common


@st.cache_data(show_spinner=False, max_entries=8)
def tasks_of(path: str, version: tuple) -> list[str]:
    """The store's tasks with dated recorded decisions; ``version`` keys the cache."""
    with Store(path, create=False) as store:
        return store.dated_tasks()


@st.cache_resource(show_spinner=False, max_entries=32)
def monitoring(path: str, version: tuple, task: str, settings: MonitorSettings) -> Monitoring:
    """The task's monitoring under ``settings`` (shared by every session, never mutated)."""
    with Store(path, create=False) as store:
        return monitor_table(store, task, settings)


def shown_pairs(summary: pd.DataFrame, selection: Selection) -> pd.DataFrame:
    """The watched pairs of the sidebar's systems and subtasks (all when none is chosen) in its grouping."""
    keep = summary["grouping"] == selection.grouping
    for column, chosen in (("model", selection.models), ("subtask", selection.subtasks)):
        if chosen:
            keep &= summary[column].astype(str).isin(chosen)
    return summary[keep]


current = sidebar.page()
st.title("Monitor")
st.caption("A dated decision log watched period by period: an alarm needs anytime-valid evidence of adverse impact "
           "(valid however often one looks) and a recent ratio under the threshold. The same table: "
           "`python -m audit monitor --db FILE --task T`.")
path = common.existing_store("This store does not exist yet: import a dated decision log to monitor it.")
version = store_version(path)
try:
    tasks = tasks_of(path, version)
except AuditError as exc:
    common.error("Cannot read the store:", exc)
    st.stop()
if not tasks:
    st.info("No task of this store has dated recorded decisions: import a decision log with a date column "
            "(the spec's `date:`) to monitor it.")
    st.stop()
if current is None:
    st.stop()  # the sidebar says why there is nothing to view
if current.selection.task not in tasks:  # the sidebar's task has no dated decisions: the sidebar moves to one that has
    sidebar.set_next("task", tasks[0])
    st.rerun()
task = current.selection.task
st.caption(f"Watching task **{md_text(task)}**, the sidebar's (tasks with dated decisions: "
           f"{md_text(', '.join(tasks))}).")
top = st.columns(4)
period = top[0].selectbox("period", list(PERIODS), index=list(PERIODS).index("week"), key="monitor_period",
                          help=TOOLTIPS["monitor_period"])
threshold = top[1].number_input("threshold", 0.05, 1.0, 0.8, 0.05, key="monitor_threshold",
                                help=TOOLTIPS["monitor_threshold"])
alpha = top[2].number_input("alpha", 0.001, 0.5, 0.05, 0.01, format="%.3f", key="monitor_alpha",
                            help=TOOLTIPS["monitor_alpha"])
family = top[3].selectbox("family", list(Family), index=list(Family).index(DEFAULT_FAMILY), key="monitor_family",
                          help=TOOLTIPS["monitor_family"])
try:
    with st.spinner("Watching the log…"):
        result = monitoring(path, version, task, MonitorSettings(period=period, threshold=float(threshold),
                                                                 alpha=float(alpha), family=family))
except AuditError as exc:
    common.error("Cannot monitor this task:", exc)
    st.stop()
st.caption(result.guarantee())
if result.undated:
    st.caption(f"{result.undated} decisions without a date are left out.")
summary = shown_pairs(result.summary, current.selection)
alarms = monitor_chart.alarm_table(summary)
st.header(f"Alarms: {int(alarms['alarm'].sum())} of {len(alarms)} watched pairs")
hidden = result.summary.drop(summary.index)
if len(hidden):
    st.caption(f"{len(hidden)} more watched pairs ({int(hidden['alarm'].sum())} alarmed) lie outside the sidebar's "
               "systems, subtasks and grouping; the correction for multiple looks and pairs counts every pair.")
st.dataframe(alarms, hide_index=True, width="stretch", key="monitor_alarms")

st.header("Ratios over time")
series = monitor_chart.watched_series(summary)
if not series:
    st.info("No pair of categories to watch for the sidebar's systems, subtasks and grouping.")
    st.stop()
labels = [" · ".join(key) for key in series]  # shown as plain text
chosen = st.selectbox("system · subtask · grouping (alarmed first)", labels, key="monitor_series")
key = series[labels.index(chosen)]
figure = monitor_chart.monitor_figure(result.looks, key, float(threshold))
common.chart(figure, result.looks[(result.looks[monitor_chart.KEYS] == list(key)).all(axis=1)],
             f"monitor_{'_'.join(key)}")
