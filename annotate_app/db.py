"""The app's database engine, one per URL per server process (``st.cache_resource``)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from data.storage.engine import default_db_url, make_engine


@st.cache_resource(show_spinner=False)
def _engine_for(url: str) -> Engine:
    return make_engine(url)


def get_engine() -> Engine:
    """The engine of ``$CRITIQUELAB_DB`` (set by ``critiquelab serve``), else the default URL."""
    return _engine_for(default_db_url())
