"""Custom Streamlit components (v2, inline, no iframe) of the annotation pages."""
