"""Helpers of the dashboard pages (kept out of ``pages/`` itself so Streamlit never lists them as pages)."""
