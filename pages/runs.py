"""Runs: the result store's audit trail, every command and dashboard action that wrote results or a report to it."""
import json

import streamlit as st

from audit.errors import AuditError
from audit.present.trail import readable
from audit.store.database import Store
from audit.store.runs import trail
from pages.frame import sidebar
from pages.shared import common

sidebar.page()
st.title("Runs")
st.caption("The store's audit trail, oldest first: what ran (command or dashboard action), when (UTC), by which "
           "version of the tool, with which options, on which data (fingerprints) and what it wrote. Rows are only "
           "ever added; commands that only print are not recorded. The same list: `python -m audit runs --db FILE`.")
path = common.existing_store("This store does not exist yet: run an audit to create it.")
try:
    with Store(path, create=False) as store:
        runs = trail(store)
except AuditError as exc:
    common.error("Cannot read the store:", exc)
    st.stop()
if runs.empty:
    st.info("No run is recorded in this store yet: scoring, imports and audit reports are recorded as they run.")
    st.stop()
st.dataframe(readable(runs), hide_index=True, width="stretch", key="runs_table",
             column_config={"run": st.column_config.NumberColumn("run", format="#%d", width="small")})
chosen = st.selectbox("one run in full", runs["run"].iloc[::-1].tolist(), key="runs_chosen",
                      format_func=lambda n: f"#{n}: " + " · ".join(
                          runs.loc[runs["run"] == n, ["action", "at"]].iloc[0].astype(str)))
row = runs[runs["run"] == chosen].iloc[0]
st.json({name: json.loads(row[name]) for name in ("options", "reads", "wrote")} | {"note": row["note"]},
        expanded=True)
