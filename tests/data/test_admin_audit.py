"""The audit trail records every kind of change, with who and when, and exports losslessly."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

from admin_factory import add_campaign, add_dataset, add_people, units_of
from sqlalchemy import func
from sqlmodel import select

from data.queue import next_unit, revise, submit
from data.services.adjudication import adjudicate
from data.services.admin import (
    add_account,
    campaign_settings,
    change_campaign_status,
    change_role,
    update_campaign_settings,
)
from data.services.admin_audit import (
    AUDIT_COLUMNS,
    audit_actions,
    audit_csv,
    audit_jsonl,
    audit_rows,
)
from data.storage.engine import session_scope
from schemas.tables import Annotation, AuditEvent, Campaign


def test_each_kind_of_change_is_recorded_with_who(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1)
        campaign_id = add_campaign(session, actor_id=people["root"]).id
    with session_scope(engine) as session:
        view = next_unit(session, campaign_id, people["ann"])
        first = submit(
            session, view.assignment_id, people["ann"], score=4, rationale="x" * 25, seconds=12
        )
    with session_scope(engine) as session:
        revise(session, first.id, people["ann"], score=6, rationale="y" * 25)
        adjudicate(session, people["rita"], units_of(session, campaign_id)[0].id, score=5, note="n")
        change_role(session, people["root"], "bob", "reviewer")
        add_account(session, people["root"], "dora", "a long password", "annotator")
        current = campaign_settings(session.get(Campaign, campaign_id))
        update_campaign_settings(session, people["root"], campaign_id, replace(current, overlap=2))
        change_campaign_status(session, people["root"], campaign_id, "pause")
    with session_scope(engine) as session:
        rows = audit_rows(session)
        # the old revision is kept, retired, beside the new one: nothing deleted in place
        revisions = session.exec(select(Annotation.revision, Annotation.is_live)).all()
    assert sorted(revisions) == [(1, False), (2, True)]
    recorded = {(row.action, row.actor) for row in rows}
    assert {
        ("campaign.create", "root"),
        ("annotation.revise", "ann"),
        ("adjudication.create", "rita"),
        ("user.role", "root"),
        ("user.create", "root"),
        ("campaign.update", "root"),
        ("campaign.pause", "root"),
    } <= recorded
    assert [row.id for row in rows] == sorted((row.id for row in rows), reverse=True)
    assert all(row.at is not None for row in rows)
    assert {"annotation", "adjudication", "campaign", "user"} <= set(audit_actions(session))


def _rows(engine, details):
    with session_scope(engine) as session:
        people = add_people(session)
        for detail in details:
            session.add(
                AuditEvent(
                    actor_id=people["root"],
                    action="test.note",
                    entity="x",
                    entity_id="1",
                    detail=detail,
                )  # fmt: skip
            )
    with session_scope(engine) as session:
        return audit_rows(session)


def test_jsonl_export_round_trips_every_event(engine):
    rows = _rows(engine, [{"note": "ünïcode ✓"}, {"before": 1, "after": [2, 3]}])
    lines = [json.loads(line) for line in audit_jsonl(rows).decode().splitlines()]
    assert [line["detail"] for line in lines] == [row.detail for row in rows]
    assert lines[0].keys() == set(AUDIT_COLUMNS)
    assert lines[0]["actor"] == "root"
    assert lines[0]["at"] == rows[0].at.isoformat()


def test_csv_export_keeps_detail_as_json_and_neutralises_formulas(engine):
    rows = _rows(engine, [{"note": '=HYPERLINK("http://x")'}])
    with session_scope(engine) as session:
        count = session.exec(select(func.count()).select_from(AuditEvent)).one()
    table = list(csv.reader(io.StringIO(audit_csv(rows).decode())))
    assert table[0] == list(AUDIT_COLUMNS)
    assert len(table) == count + 1
    assert json.loads(table[1][6]) == {"note": '=HYPERLINK("http://x")'}
    # a cell that itself starts like a formula is prefixed
    starts = [replace(rows[0], action="=cmd|' /C calc'!A0")]
    assert list(csv.reader(io.StringIO(audit_csv(starts).decode())))[1][3].startswith("'=")
