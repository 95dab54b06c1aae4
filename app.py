"""Allocation-audit dashboard: ``streamlit run app.py``. Sidebar view settings + navigation between the pages."""
import streamlit as st

from pages.frame import sidebar

sidebar.configure()

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/home:", default=True),
    st.Page("pages/run_audit.py", title="Run audit", icon=":material/play_arrow:"),
    st.Page("pages/allocation_gaps.py", title="Allocation gaps", icon=":material/scatter_plot:"),
    st.Page("pages/group_correlations.py", title="Group correlations", icon=":material/bar_chart:"),
    st.Page("pages/model_rankings.py", title="Model rankings", icon=":material/leaderboard:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/cairo_explorer.py", title="CAIRO explorer", icon=":material/travel_explore:"),
    st.Page("pages/monitor.py", title="Monitor", icon=":material/monitor_heart:"),
    st.Page("pages/runs.py", title="Runs", icon=":material/history:"),
]

navigation = st.navigation(PAGES)
sidebar.entry_sidebar()  # rendered by the entry script, so the filters keep their state across pages
navigation.run()
