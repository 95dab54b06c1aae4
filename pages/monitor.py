"""Monitor: a task's dated decision log watched look by look (audit/engine/monitor.py), alarms first, then per category
the impact ratio over time with its anytime-valid band, the recent window and the threshold."""

import streamlit as st

from audit.enums import DEFAULT_FAMILY, Family
from audit.errors import AuditError
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


sidebar.page()
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
top = st.columns(5)
task = top[0].selectbox("task", tasks, key="monitor_task", help=TOOLTIPS["monitor_task"])
period = top[1].selectbox("period", list(PERIODS), index=list(PERIODS).index("week"), key="monitor_period",
                          help=TOOLTIPS["monitor_period"])
threshold = top[2].number_input("threshold", 0.05, 1.0, 0.8, 0.05, key="monitor_threshold",
                                help=TOOLTIPS["monitor_threshold"])
alpha = top[3].number_input("alpha", 0.001, 0.5, 0.05, 0.01, format="%.3f", key="monitor_alpha",
                            help=TOOLTIPS["monitor_alpha"])
family = top[4].selectbox("family", list(Family), index=list(Family).index(DEFAULT_FAMILY), key="monitor_family",
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
alarms = monitor_chart.alarm_table(result.summary)
raised = int(alarms["alarm"].sum())
st.header(f"Alarms: {raised} of {len(alarms)} watched pairs")
st.dataframe(alarms, hide_index=True, width="stretch", key="monitor_alarms")

st.header("Ratios over time")
series = monitor_chart.watched_series(result.summary)
if not series:
    st.info("No pair of categories to watch in this task.")
    st.stop()
labels = [" · ".join(key) for key in series]  # shown as plain text
chosen = st.selectbox("system · subtask · grouping (alarmed first)", labels, key="monitor_series")
key = series[labels.index(chosen)]
figure = monitor_chart.monitor_figure(result.looks, key, float(threshold))
common.chart(figure, result.looks[(result.looks[monitor_chart.KEYS] == list(key)).all(axis=1)],
             f"monitor_{'_'.join(key)}")
