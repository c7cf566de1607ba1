"""Reviewer accept / reject on the pages under AppTest: the Adjudicate page rejects a human
answer with a comment, the Monitor lists one annotator's answers and accepts it back, and the
annotator sees the comment in My work and revises (the revision waits for review)."""

from __future__ import annotations

import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of
from sqlmodel import col, select
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from annotate_app.text import escape_markdown
from data import queue
from data.services.users import UserRecord, to_record
from data.storage.engine import session_scope
from schemas.tables import Assignment, AuditEvent, ReviewDecision, User

TIMEOUT = 60
COMMENT = "Picture 0 shows <b>three</b> cats, not two: count again."


@pytest.fixture
def world(engine, db_url, monkeypatch):
    """ann and bob answered the first unit of a campaign with K = 3 (cat can take the third)."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=2)
        campaign = add_campaign(session, actor_id=people["root"])
        unit = units_of(session, campaign.id)[0]
        ids = {
            name: answer(session, unit, people[name], score=score).id
            for name, score in (("ann", 2), ("bob", 5))
        }
        records = {name: to_record(session.get(User, people[name])) for name in people.ids}
    return engine, records, ids


def _page(file: str, user: UserRecord) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / file), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = user
    return at.run()


def _decisions(engine) -> list[tuple[int, str, bool]]:
    with session_scope(engine) as session:
        rows = session.exec(select(ReviewDecision).order_by(col(ReviewDecision.id))).all()
        return [(r.annotation_id, r.decision, r.revoked_at is None) for r in rows]


def test_adjudicate_rejects_monitor_accepts_my_work_shows_the_comment(world):
    engine, people, ids = world
    at = _page("pages/review_adjudicate.py", people["rita"])
    assert not at.exception and not at.error
    at.text_area(key=f"adjudicate_comment_{ids['ann']}").input(COMMENT)
    at.button(key=f"adjudicate_reject_button_{ids['ann']}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert _decisions(engine) == [(ids["ann"], "reject", True)]
    assert any("of ann rejected" in s.value for s in at.success)
    # one counted answer is left on the unit: it leaves the queue of units to adjudicate
    assert [i.value for i in at.info] == [
        "No unit with two or more answers is waiting for a ruling."
    ]

    # The annotator sees the comment, as typed, and may revise.
    mine = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    mine.session_state[USER_KEY] = people["ann"]
    mine.query_params["annotation"] = str(ids["ann"])
    mine.run()
    mine.switch_page("pages/my_work.py")
    mine.run()
    assert not mine.exception
    [warning] = mine.warning
    assert "rejected this answer" in warning.value and "rita" in warning.value
    assert "<b>" not in warning.value.replace("\\<b>", "")  # shown as text, never as HTML
    assert "three" in warning.value
    # the list of answers (the opened answer's revision history is another table)
    (answers,) = [d.value for d in mine.dataframe if "Review" in d.value.columns]
    assert list(answers["Review"]) == ["rejected: see the comment"]
    with session_scope(engine) as session:
        revised = queue.revise(
            session, ids["ann"], people["ann"].id, score=3, rationale="Three cats, I see now."
        )
        session.flush()
        revised_id = revised.id
    mine.query_params["annotation"] = str(revised_id)
    mine.run()
    assert not mine.exception
    assert any("waits for their review" in info.value for info in mine.info)

    # The admin's Monitor lists ann's answers and accepts the revision back on a free slot.
    monitor = _page("pages/admin_monitor.py", people["root"])
    assert not monitor.exception
    monitor.selectbox(key="review_annotator").select("ann").run()
    listed = next(frame.value for frame in monitor.dataframe if "Review" in frame.value)
    assert list(listed["Review"]) == ["revised after rejection, waiting for review"]
    monitor.button(key=f"monitor_accept_{revised_id}").click().run()
    assert not monitor.exception and not monitor.error, [e.value for e in monitor.error]
    assert _decisions(engine) == [(ids["ann"], "reject", True), (revised_id, "accept", True)]
    with session_scope(engine) as session:
        statuses = session.exec(select(Assignment.status).order_by(col(Assignment.id))).all()
        actions = session.exec(
            select(AuditEvent.action).where(col(AuditEvent.action).like("answer.%"))
        ).all()
    assert statuses == ["submitted", "submitted"]
    assert sorted(actions) == ["answer.accept", "answer.reject"]


def test_a_rejection_without_a_comment_is_refused_on_the_page(world):
    engine, people, ids = world
    at = _page("pages/review_adjudicate.py", people["rita"])
    at.button(key=f"adjudicate_reject_button_{ids['bob']}").click().run()
    assert [e.value for e in at.error] == [
        escape_markdown(
            "a rejection needs a comment: tell the annotator what is wrong with the answer"
        )
    ]
    assert _decisions(engine) == []


def test_a_reviewer_reviews_from_the_per_annotator_list(world):
    """The *Review answers* page gives reviewers the per-annotator list (the Monitor is for
    admins). A rejection takes the unit below two counted answers, so it leaves the Adjudicate
    queue; the unit's remaining answer is still listed here, and can be reviewed."""
    engine, people, ids = world
    at = _page("pages/review_answers.py", people["rita"])
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="answers_annotator").value == "ann"
    # the unit answered is there to read before a decision (only the rationale was shown)
    unit = next(e for e in at.expander if e.label.startswith("The unit answered"))
    shown = " ".join(m.value for m in unit.markdown)
    assert "**Question**" in shown and "**Response**" in shown
    at.text_area(key=f"answers_comment_{ids['ann']}").input(COMMENT)
    at.button(key=f"answers_reject_button_{ids['ann']}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert _decisions(engine) == [(ids["ann"], "reject", True)]
    assert any("of ann rejected" in s.value for s in at.success)

    adjudicate = _page("pages/review_adjudicate.py", people["rita"])
    assert [i.value for i in adjudicate.info] == [
        "No unit with two or more answers is waiting for a ruling."
    ]

    at.selectbox(key="answers_annotator").select("bob").run()
    listed = next(frame.value for frame in at.dataframe if "Review" in frame.value)
    assert list(listed["id"]) == [ids["bob"]] and list(listed["Review"]) == ["not reviewed"]
    at.button(key=f"answers_accept_{ids['bob']}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert _decisions(engine) == [(ids["ann"], "reject", True), (ids["bob"], "accept", True)]

    # only the rejected answers of ann: the state filter
    at.selectbox(key="answers_annotator").select("ann").run()
    at.multiselect(key="answers_states").select("accepted").run()
    assert [i.value for i in at.info] == [
        "No current answer of this annotator in these review states."
    ]


def test_the_review_answers_page_refuses_an_annotator(world):
    _, people, _ = world
    at = _page("pages/review_answers.py", people["ann"])
    assert not at.exception
    assert "you are logged in as ann (annotator)" in at.error[0].value
    assert not at.dataframe
