"""Allocation-audit dashboard: ``streamlit run app.py``. Sidebar view settings + navigation between the pages."""
import streamlit as st

from pages import common

st.set_page_config(page_title="Allocation audit", page_icon=":material/balance:", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/home:", default=True),
    st.Page("pages/run_audit.py", title="Run audit", icon=":material/play_arrow:"),
    st.Page("pages/allocation_gaps.py", title="Allocation gaps", icon=":material/scatter_plot:"),
    st.Page("pages/group_correlations.py", title="Group correlations", icon=":material/bar_chart:"),
    st.Page("pages/model_rankings.py", title="Model rankings", icon=":material/leaderboard:"),
    st.Page("pages/cairo_explorer.py", title="CAIRO explorer", icon=":material/travel_explore:"),
]

navigation = st.navigation(PAGES)
common.sidebar()
navigation.run()
