"""Home: the campaigns this user may see, with progress."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from annotate_app.navigation import page_available
from annotate_app.text import escape_markdown
from data.services.home import campaigns_for_user
from data.storage.engine import session_scope

user = require_role("annotator", "reviewer", "admin")

st.title("Home")
with session_scope(get_engine()) as session:
    campaigns = campaigns_for_user(session, user)

if not campaigns:
    st.info("No campaigns yet." if user.role != "annotator" else "No campaign is open to you yet.")
    st.stop()

table = pd.DataFrame(
    {
        "Campaign": [escape_markdown(c.name) for c in campaigns],
        "Dataset": [escape_markdown(c.dataset) for c in campaigns],
        "Protocol": [c.protocol for c in campaigns],
        "Status": [c.status + (" (demo)" if c.synthetic else "") for c in campaigns],
        "Complete": [f"{c.fraction_complete:.0%}" for c in campaigns],
        "Units": [c.units for c in campaigns],
        "Annotations": [c.annotations for c in campaigns],
        "Mine": [c.mine for c in campaigns],
        "Open to me": [c.open_to_me for c in campaigns],
    }
)
st.table(table, hide_index=True)
st.caption(
    "Complete: units with a full overlap of annotations. Open to me: units you can take now."
)
if page_available(user.role, "pages/annotate.py") and any(c.open_to_me for c in campaigns):
    st.page_link("pages/annotate.py", label="Start annotating", icon=":material/edit_note:")
