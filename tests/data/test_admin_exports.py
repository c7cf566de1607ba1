"""Annotation downloads of the campaign page read back as the same judgements."""

from __future__ import annotations

import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of

from data.io.exporters.downloads import annotations_export
from data.io.importers.reader import read_judgement_records
from data.storage.engine import session_scope


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "parquet"])
def test_downloads_hold_every_live_annotation(engine, tmp_path, export_format):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1)
        campaign = add_campaign(session)
        first, second = units_of(session, campaign.id)
        answer(session, first, people["ann"], score=3, rationale="Wrong count.", seconds=12)
        answer(session, second, people["bob"], score=9, rationale="Right, 完整.", seconds=30)
        data = annotations_export(session, "camp", export_format)
    path = tmp_path / f"download.{export_format}"
    path.write_bytes(data)
    records = [record for _, record in read_judgement_records(path)]
    assert [(r.annotator, r.response_id, r.score, r.rationale, r.seconds) for r in records] == [
        ("ann", "ds-item-0/m1", 3, "Wrong count.", 12),
        ("bob", "ds-item-0/m2", 9, "Right, 完整.", 30),
    ]
    assert {r.judge_kind for r in records} == {"human"}


def test_an_unknown_format_is_refused(engine):
    with session_scope(engine) as session, pytest.raises(ValueError, match="xlsx"):
        annotations_export(session, "camp", "xlsx")
