"""The presentation layer, free of Streamlit: Plotly figures (:mod:`charts`), the tables in words and display names
pages and reports show (:mod:`readable`), and figure export and report bundles (:mod:`exports`). It reads audits; the
audit and the store never import it."""
