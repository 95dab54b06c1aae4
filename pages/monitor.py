"""Monitor: a task's dated decision logs watched period by period — the impact ratio over time with its
anytime-valid band, and alarms whose chance of being raised by a fair system is bounded (:mod:`audit.monitor`)."""
from pathlib import Path

import streamlit as st

from audit.errors import AuditError
from audit.metrics.impact import FOUR_FIFTHS
from audit.metrics.verdict import DEFAULT_FAMILY, FAMILIES
from audit.monitor import PERIODS, Monitoring, MonitorSettings, monitor_table
from audit.present.monitor_chart import ratio_over_time
from audit.present.tooltips import TOOLTIPS
from audit.store import Store
from audit.store_files import store_version
from pages.shared import common

SHOWN = {"model": "system", "subtask": "subtask", "grouping": "grouping", "name": "group", "comparator": "comparator",
         "members": "decisions", "rate": "rate", "cumulative_ratio": "ratio", "band_lo": "band low",
         "band_hi": "band high", "recent_ratio": "last window", "change": "change", "alarm": "alarm",
         "first_alarm": "first raised", "evidence_then": "detector then", "to_clear": "what would clear it"}


@st.cache_data(show_spinner=False, max_entries=8)
def dated_tasks(path: str, version: tuple) -> list[str]:
    with Store(path, create=False) as store:
        return store.dated_tasks()


@st.cache_data(show_spinner="Counting the decisions period by period…", max_entries=16)
def watched(path: str, version: tuple, task: str, settings: MonitorSettings) -> Monitoring:
    with Store(path, create=False) as store:
        return monitor_table(store, task, settings)


common.page()
st.title("Monitor")
st.caption("A deployed system's dated decisions, one look per period: each category's impact ratio against the "
           "most-selected one over time, with a band valid at every look at once, and an alarm when the evidence "
           "shows adverse impact. The same numbers: `python -m audit monitor --db FILE --task TASK`.")
path = st.session_state.get("store_path") or common.default_store()
tasks = dated_tasks(path, store_version(path)) if Path(path).is_file() else []
if not tasks:
    st.info("No task of this store has dated decisions. Import a decision log whose spec names its date column "
            "(`date:`) with `python -m audit import --format decisions`, and append each new period with "
            "`--append`; this page then watches it.")
    st.stop()
task = st.selectbox("task", tasks, key="monitor_task")
period_column, threshold_column, alpha_column, family_column = st.columns(4)
period = period_column.selectbox("look every", list(PERIODS), index=list(PERIODS).index("week"),
                                 key="monitor_period", help=TOOLTIPS["period"])
threshold = threshold_column.number_input("threshold", 0.5, 1.0, FOUR_FIFTHS, 0.05, key="monitor_threshold",
                                          help=TOOLTIPS["threshold"])
alpha = alpha_column.select_slider("false-alarm bound α", [0.01, 0.05, 0.1], value=0.05, key="monitor_alpha",
                                   help=TOOLTIPS["alpha"])
family = family_column.selectbox("family", list(FAMILIES), index=list(FAMILIES).index(DEFAULT_FAMILY),
                                 key="monitor_family", help=TOOLTIPS["family"])
try:
    result = watched(path, store_version(path), task, MonitorSettings(period, threshold=float(threshold),
                                                                       alpha=alpha, family=family))
except AuditError as exc:
    common.error("Cannot monitor this task:", exc)
    st.stop()
st.caption(result.guarantee())
summary = result.summary.sort_values(["alarm", "recent_ratio"], ascending=[False, True]).reset_index(drop=True)
raised = int(summary["alarm"].sum())
(st.error if raised else st.success)(f"Alarms now: {raised} of {len(summary)} watched pairs, over "
                                     f"{len(result.periods)} {period}s from {result.periods[0]}.")
st.dataframe(summary[list(SHOWN)].rename(columns=SHOWN), hide_index=True, width="stretch", key="monitor_summary")
chosen = st.selectbox("pair over time", summary.index.tolist(), key="monitor_pair",
                      format_func=lambda i: " · ".join(map(str, summary.loc[i, ["model", "subtask", "grouping"]]))
                      + f": {summary.loc[i, 'name']} against {summary.loc[i, 'comparator']}"
                      + (" (alarm)" if summary.loc[i, "alarm"] else ""))
pair = summary.loc[chosen]
looks = result.looks[(result.looks[["model", "subtask", "grouping", "category"]]
                      == pair[["model", "subtask", "grouping", "category"]].to_numpy()).all(axis=1)]
common.chart(ratio_over_time(looks, threshold=float(threshold), period=period), looks, "monitor")
