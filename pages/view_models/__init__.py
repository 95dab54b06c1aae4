"""The pages' view-models: what a page shows of one audit, free of Streamlit (one audit at quota k; a page's report
and bundle settings)."""
