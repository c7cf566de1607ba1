"""Review answers: one annotator's current answers in a campaign, each with its review state, to
reject (with a comment), accept or undo (reviewers and admins).

The Monitor holds the same list for admins; this page gives it to reviewers too. It is also where
a unit's remaining answer is reviewed once a rejection took the unit below two counted answers
and out of the Adjudicate queue (PROTOCOLS.md, *Review of answers*). The services check the
role again on the server (:mod:`data.services.answer_review`).
"""

from __future__ import annotations

import streamlit as st

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from annotate_app.pickers import pick_campaign
from annotate_app.review_views import render_answer_review
from schemas.core import stored_id

user = require_role("reviewer", "admin")
engine = get_engine()

st.title("Review answers")
campaign = pick_campaign(engine, key="answers_campaign")
render_answer_review(engine, stored_id(user), campaign, key="answers", heading=False)
