"""The Run page's widgets and progress glue (one page uses them; Streamlit-free work lives in ``audit/``)."""
