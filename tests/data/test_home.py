"""The home page's campaign list: who sees which campaign, and the progress counts."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session

from data.queue import next_unit, submit
from data.services.answer_review import reject_answer_as
from data.services.campaign_progress import campaign_progress
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.home import campaigns_for_user
from data.services.users import UserRecord, create_user
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import Campaign, Dataset, Item, Response

PASSWORD = "correct horse battery"
RATIONALE = "Clear, correct and complete answer to the question."


def _dataset(session: Session, items: int = 2) -> None:
    dataset = Dataset(name="图像问答", benchmark="alignmmbench")
    session.add(dataset)
    session.flush()
    for index in range(items):
        item = Item(dataset_id=dataset.id, item_id=f"q{index}", benchmark="alignmmbench",
                    question=f"问题 {index}?", content_sha256=f"i{index}")  # fmt: skip
        session.add(item)
        session.flush()
        session.add(Response(response_id=f"q{index}/m", item_pk=item.id, model="m",
                             content="回答", content_sha256=f"r{index}"))  # fmt: skip
    session.flush()


def _campaign(session: Session, name: str, status: str = "active", overlap: int = 2) -> Campaign:
    campaign = create_campaign(
        session, CampaignSpec(name=name, dataset="图像问答", protocol="alignmmbench",
                              overlap=overlap)
    )  # fmt: skip
    campaign.status = status
    session.add(campaign)
    return campaign


def _answer(session: Session, campaign: Campaign, user: UserRecord) -> None:
    assert campaign.id is not None
    view = next_unit(session, campaign.id, user.id)
    assert view is not None
    submit(session, view.assignment_id, user.id, score=7, rationale=RATIONALE)


def test_annotators_see_open_campaigns_and_closed_ones_they_worked_on(engine: Engine) -> None:
    with session_scope(engine) as session:
        _dataset(session)
        ann = create_user(session, "ann", PASSWORD, "annotator")
        bob = create_user(session, "bob", PASSWORD, "annotator")
        admin = create_user(session, "root", PASSWORD, "admin")
        worked = _campaign(session, "worked-on")
        _campaign(session, "paused", status="paused")
        _campaign(session, "closed-untouched", status="closed")
        _campaign(session, "开放")
        _answer(session, worked, ann)
        worked.status = "closed"
        session.add(worked)
    with session_scope(engine) as session:
        seen_by_ann = {c.name for c in campaigns_for_user(session, ann)}
        seen_by_bob = {c.name for c in campaigns_for_user(session, bob)}
        seen_by_admin = {c.name for c in campaigns_for_user(session, admin)}
    assert seen_by_ann == {"worked-on", "paused", "开放"}
    assert seen_by_bob == {"paused", "开放"}
    assert seen_by_admin == {"worked-on", "paused", "closed-untouched", "开放"}


def test_progress_counts_units_annotations_and_the_viewers_share(engine: Engine) -> None:
    with session_scope(engine) as session:
        _dataset(session, items=3)
        ann = create_user(session, "ann", PASSWORD, "annotator")
        bob = create_user(session, "bob", PASSWORD, "annotator")
        single = _campaign(session, "single", overlap=1)
        _answer(session, single, ann)
        _answer(session, single, ann)
    with session_scope(engine) as session:
        [for_ann] = campaigns_for_user(session, ann)
        [for_bob] = campaigns_for_user(session, bob)
    # overlap 1: each answer completes a unit; one of three units is left for anyone
    assert (for_ann.units, for_ann.units_complete, for_ann.annotations) == (3, 2, 2)
    assert (for_ann.mine, for_ann.open_to_me) == (2, 1)
    assert (for_bob.mine, for_bob.open_to_me) == (0, 1)
    assert for_ann.fraction_complete == 2 / 3


def test_a_unit_is_complete_when_overlap_annotators_answered_it(engine: Engine) -> None:
    with session_scope(engine) as session:
        _dataset(session, items=1)
        ann = create_user(session, "ann", PASSWORD, "annotator")
        bob = create_user(session, "bob", PASSWORD, "annotator")
        cat = create_user(session, "cat", PASSWORD, "annotator")
        pair = _campaign(session, "two", overlap=2)
        _answer(session, pair, ann)
    with session_scope(engine) as session:
        [half] = campaigns_for_user(session, cat)
        _answer(session, pair, bob)
    with session_scope(engine) as session:
        [full] = campaigns_for_user(session, cat)
        [for_bob] = campaigns_for_user(session, bob)
    assert (half.units_complete, half.annotations, half.open_to_me) == (0, 1, 1)
    assert (full.units_complete, full.annotations, full.open_to_me) == (1, 2, 0)
    assert (for_bob.mine, for_bob.open_to_me) == (1, 0)


def test_a_rejected_answer_counts_as_the_monitor_counts_it(engine: Engine) -> None:
    """The Home page's progress is the Monitor's (`campaign_progress`): an answer a reviewer
    rejected left the reference, so its unit is not complete and the answer is not counted."""
    with session_scope(engine) as session:
        _dataset(session, items=1)
        ann = create_user(session, "ann", PASSWORD, "annotator")
        rita = create_user(session, "rita", PASSWORD, "reviewer")
        solo = _campaign(session, "solo", overlap=1)
        assert solo.id is not None
        view = next_unit(session, solo.id, ann.id)
        assert view is not None
        answer = submit(session, view.assignment_id, ann.id, score=7, rationale=RATIONALE)
    with session_scope(engine) as session:
        [before] = campaigns_for_user(session, ann)
        reject_answer_as(session, rita.id, stored_id(answer), "The second cat is not counted.")
    with session_scope(engine) as session:
        [after] = campaigns_for_user(session, ann)
        progress = campaign_progress(session, solo.id)
    assert (before.units_complete, before.annotations, before.mine) == (1, 1, 1)
    assert (after.units_complete, after.annotations, after.mine) == (0, 0, 0)
    assert (progress.units_complete, progress.annotations) == (0, 0)


def test_a_paused_campaign_has_nothing_open(engine: Engine) -> None:
    with session_scope(engine) as session:
        _dataset(session)
        ann = create_user(session, "ann", PASSWORD, "annotator")
        _campaign(session, "p", status="paused")
    with session_scope(engine) as session:
        [paused] = campaigns_for_user(session, ann)
    assert paused.units == 2 and paused.open_to_me == 0 and paused.fraction_complete == 0
