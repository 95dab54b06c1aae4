"""CAIRO explorer: placeholder until the CAIRO analysis lands in ``audit.cairo``."""
import streamlit as st

from pages.shared import common

common.page()
st.title("CAIRO explorer")
st.info("Coming soon: bias of prompt combinations (CAIRO) over BOLD and HONEST prompt paraphrases. "
        "This page will show it once the CAIRO analysis is part of the audit package.")
