"""Disagreement review: the queue of a judge's disagreements, tags with the audit trail, export."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from admin_factory import add_campaign, add_dataset, add_people, units_of
from sqlmodel import select

from calibration import CalibrationOptions
from calibration.analysis import find_disagreements
from data.io.exporters.tags import TAG_COLUMNS, export_disagreement_tags
from data.readmodels.frames import campaign_judgement_frame
from data.services.disagreements import (
    DisagreementError,
    campaign_tags,
    disagreement_queue,
    review_settings,
    set_review_settings,
    tag_disagreement,
)
from data.services.judgements import insert_judgements
from data.services.roles import PermissionDenied
from data.storage.audit import list_events
from data.storage.campaign_lookup import campaign_protocol, unit_key_map
from data.storage.engine import session_scope
from schemas.csv_cells import restored
from schemas.disagreements import DEFAULT_TAXONOMY
from schemas.tables import AuditEvent, Campaign, DisagreementTag, Judgement, Unit


def _found(session, campaign_id: int, reference: dict, judge: str = "gpt"):
    """The judge's disagreements with ``reference`` (unit key → label, given as adjudications)
    under calibration's rule and the campaign's threshold, as the page's caller finds them."""
    campaign = session.get(Campaign, campaign_id)
    options = CalibrationOptions(
        protocol=campaign_protocol(campaign),
        disagreement_threshold=review_settings(campaign).threshold,
    )
    frame = campaign_judgement_frame(session, campaign_id)
    return find_disagreements(frame, options, judge, overrides=reference).entries


def _judge(session, unit: Unit, name: str, *, score=None, preference=None, order="AB", sample=0):
    key = unit_key_map(session, unit.campaign_id)[unit.id]
    insert_judgements(
        session,
        [
            Judgement(
                judge=name, protocol="pairwise" if preference or unit.pair_pk else "alignmmbench",
                unit_key=key, response_pk=unit.response_pk, pair_pk=unit.pair_pk, score=score,
                preference=preference, shown_order=order, sample=sample,
                parse_status="ok" if score is not None or preference else "unparsed",
            )
        ],
    )  # fmt: skip


@pytest.fixture
def pointwise(engine):
    """Four units of a 1–10 campaign; the judge is off the reference by 3, 1.8, 1.7 and 5."""
    return _pointwise(engine)


def _pointwise(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=2, models=("m1", "m2"))
        campaign = add_campaign(session)
        units = units_of(session, campaign.id)
        keys = unit_key_map(session, campaign.id)
        reference = {keys[u.id]: 5.0 for u in units}
        for unit, score in zip(units, (8.0, 6.8, 3.3, 10.0), strict=True):
            _judge(session, unit, "gpt", score=score)
        _judge(session, units[1], "gpt", score=6.8, sample=1)  # samples are averaged
        ids = [u.id for u in units]
    return engine, people, campaign.id, ids, reference


def test_queue_holds_gaps_of_at_least_the_threshold_largest_first(pointwise):
    engine, people, campaign_id, ids, reference = pointwise
    with session_scope(engine) as session:
        settings = review_settings(session.get(Campaign, campaign_id))
        queue = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )
    # default threshold: 20% of the 1–10 scale's width = 1.8 points; 1.7 stays out
    assert settings.threshold == 1.8 and settings.taxonomy == DEFAULT_TAXONOMY
    assert [(e.unit_id, round(e.gap, 6), e.judge_value, e.reference_value) for e in queue] == [
        (ids[3], 5.0, "10", "5"),
        (ids[0], 3.0, "8", "5"),
        (ids[1], 1.8, "6.8", "5"),
    ]
    assert all(e.cause is None for e in queue)


def test_a_campaign_threshold_changes_the_queue_and_is_audited(pointwise):
    engine, people, campaign_id, ids, reference = pointwise
    with session_scope(engine) as session:
        settings = set_review_settings(
            session, people["root"], campaign_id, threshold=3, taxonomy=["too harsh", "other"]
        )
    with session_scope(engine) as session:
        queue = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )
        events = list_events(session, action_prefix="campaign.update")
    assert settings.threshold == 3 and settings.taxonomy == ("too harsh", "other")
    assert [e.unit_id for e in queue] == [ids[3], ids[0]]
    assert events[0].detail["after"] == {"threshold": 3, "taxonomy": ["too harsh", "other"]}
    assert events[0].detail["before"]["taxonomy"] == list(DEFAULT_TAXONOMY)


@pytest.mark.parametrize(
    ("threshold", "taxonomy", "message"),
    [
        (0, None, "the disagreement threshold is 0, but it must be more than 0 and at most the "
                  "scale's width (9 for integers 1–10)"),
        (None, ["a", " a "], "the taxonomy names a twice: name it once"),
        (None, ["a", ""], "the taxonomy has an empty cause: name every cause, e.g. a,b,c"),
        # stored and shown raw: the override reordered the text after it, on the page and in the
        # report; the newline made two causes when the form was saved again
        (None, ["a", "too\u202eharsh"], "the taxonomy's cause 'too\\u202eharsh' holds a "
                                       "bidirectional control (U+202E) at character 4: remove it"),
        (None, ["a", "two\nlines"], "the taxonomy's cause 'two\\nlines' holds a control "
                                   "character (U+000A) at character 4: remove it"),
    ],
)  # fmt: skip
def test_bad_settings_are_refused_with_the_fix(pointwise, threshold, taxonomy, message):
    engine, people, campaign_id, _, _ = pointwise
    with session_scope(engine) as session, pytest.raises(DisagreementError) as error:
        set_review_settings(
            session, people["root"], campaign_id, threshold=threshold, taxonomy=taxonomy
        )
    assert str(error.value) == message


def test_pairwise_disagreement_is_a_verdict_off_the_reference_label(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1", "m2", "m3"))
        campaign = add_campaign(session, protocol="pairwise")
        units = units_of(session, campaign.id)
        keys = unit_key_map(session, campaign.id)
        _judge(session, units[0], "gpt", preference="A", order="AB")
        _judge(session, units[0], "gpt", preference="B", order="BA")  # split: position bias
        _judge(session, units[1], "gpt", preference="B")  # against the reference
        _judge(session, units[2], "gpt", preference="A")  # agrees
        reference = {keys[u.id]: "A" for u in units}
        queue = disagreement_queue(
            session, people["rita"], campaign.id, "gpt", _found(session, campaign.id, reference)
        )
        with pytest.raises(DisagreementError, match="a pairwise campaign has no disagreement"):
            set_review_settings(session, people["root"], campaign.id, threshold=1, taxonomy=None)
    assert [(e.unit_id, e.judge_value, e.reference_value, e.gap) for e in queue] == [
        (units[1].id, "B", "A", 1.0),
        (units[0].id, "A×1 B×1", "A", 0.5),
    ]


def test_a_tag_and_its_audit_event_are_one_transaction(pointwise):
    engine, people, campaign_id, ids, reference = pointwise
    with session_scope(engine) as session:
        entry = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )[0]
    with pytest.raises(RuntimeError), session_scope(engine) as session:
        tag_disagreement(session, people["rita"], entry, cause="too lenient", note="Kind.")
        raise RuntimeError("the request dies before the commit")
    with session_scope(engine) as session:
        assert session.exec(select(DisagreementTag)).all() == []
        assert list_events(session, action_prefix="disagreement.") == []
        tag = tag_disagreement(session, people["rita"], entry, cause="too lenient", note=" Kind. ")
        tag_id = tag.id
    with session_scope(engine) as session:
        event = session.exec(
            select(AuditEvent).where(AuditEvent.action == "disagreement.tag")
        ).one()
    assert event.entity_id == str(tag_id) and event.actor_id == people["rita"]
    assert event.detail == {
        "campaign_id": campaign_id, "unit_id": ids[3], "judge": "gpt", "before": None,
        "after": "too lenient", "note": "Kind.", "judge_value": "10", "reference_value": "5",
        "retired": None,
    }  # fmt: skip


def test_retagging_adds_a_row_and_tagged_units_leave_the_queue(any_engine):
    """On SQLite and PostgreSQL: the partial unique index allows one live tag per unit."""
    engine, people, campaign_id, ids, reference = _pointwise(any_engine)
    with session_scope(engine) as session:
        entry = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )[0]
        first = tag_disagreement(session, people["rita"], entry, cause="too lenient")
    with session_scope(engine) as session:
        second = tag_disagreement(session, people["root"], entry, cause="human error", note="x")
    with session_scope(engine) as session:
        rows = session.exec(select(DisagreementTag).order_by(DisagreementTag.id)).all()
        open_queue = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )
        everything = disagreement_queue(
            session,
            people["rita"],
            campaign_id,
            "gpt",
            _found(session, campaign_id, reference),
            include_tagged=True,
        )
        event = list_events(session, action_prefix="disagreement.")[0]
        tags = campaign_tags(session, campaign_id)
    assert [(r.id, r.cause, r.is_live) for r in rows] == [
        (first.id, "too lenient", False),
        (second.id, "human error", True),
    ]
    assert event.detail["before"] == "too lenient" and event.detail["retired"] == first.id
    assert [e.unit_id for e in open_queue] == [ids[0], ids[1]]
    assert [(e.unit_id, e.cause) for e in everything][0] == (ids[3], "human error")
    assert [(t.cause, t.reviewer, t.unit_key) for t in tags] == [
        ("human error", "root", "r:ds-item-1/m2")
    ]


def test_causes_come_from_the_taxonomy_and_other_needs_a_note(pointwise):
    engine, people, campaign_id, _, reference = pointwise
    with session_scope(engine) as session:
        entry = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )[0]
        with pytest.raises(DisagreementError) as unknown:
            tag_disagreement(session, people["rita"], entry, cause="lazy")
        with pytest.raises(DisagreementError) as bare:
            tag_disagreement(session, people["rita"], entry, cause="other", note="  ")
    assert str(unknown.value) == (
        "'lazy' is not a cause of campaign 'camp': choose one of " + ", ".join(DEFAULT_TAXONOMY)
    )
    assert str(bare.value) == "write a note that says what the cause is when you choose 'other'"


def test_annotators_may_neither_see_nor_tag_disagreements(pointwise):
    engine, people, campaign_id, _, reference = pointwise
    with session_scope(engine) as session:
        entry = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )[0]
        with pytest.raises(PermissionDenied, match="ann is annotator; only reviewer or admin"):
            disagreement_queue(
                session, people["ann"], campaign_id, "gpt", _found(session, campaign_id, reference)
            )
        with pytest.raises(PermissionDenied, match="ann is annotator; only reviewer or admin"):
            tag_disagreement(session, people["ann"], entry, cause="too lenient")
        with pytest.raises(PermissionDenied, match="rita is reviewer; only admin"):
            set_review_settings(session, people["rita"], campaign_id, threshold=2, taxonomy=None)


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "parquet"])
def test_tags_export_round_trips(pointwise, tmp_path, export_format):
    engine, people, campaign_id, _, reference = pointwise
    with session_scope(engine) as session:
        queue = disagreement_queue(
            session, people["rita"], campaign_id, "gpt", _found(session, campaign_id, reference)
        )
        tag_disagreement(session, people["rita"], queue[0], cause="too lenient", note="=1+1")
        tag_disagreement(session, people["rita"], queue[1], cause="other", note='say "hi",\nok')
    path = tmp_path / f"tags.{export_format}"
    with session_scope(engine) as session:
        written = export_disagreement_tags(session, "camp", path, export_format)
        expected = campaign_tags(session, "camp")
    if export_format == "jsonl":
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    elif export_format == "csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        rows = [{k: restored(v) for k, v in row.items()} for row in frame.to_dict("records")]
        assert "'=1+1" in path.read_text("utf-8")  # the formula is neutralised in the file
    else:
        rows = pd.read_parquet(path).to_dict("records")
    assert written == 2 and list(rows[0]) == list(TAG_COLUMNS)
    assert [(str(r["unit_key"]), r["cause"], r["note"], float(r["gap"])) for r in rows] == [
        (t.unit_key, t.cause, t.note, t.gap) for t in expected
    ]
    assert [r["created_at"] for r in rows] == [t.created_at.isoformat() for t in expected]
