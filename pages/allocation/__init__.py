"""The Allocation page's panels (one page uses them; Streamlit-free work lives in ``audit/``)."""
