"""``export annotations``: human judgements of a campaign, read back unchanged in every format."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from importing_fixtures import item_record, make_image, write_jsonl
from sqlalchemy.engine import Engine
from sqlmodel import select

from data.io.exporters import annotation_records, write_judgement_records
from data.io.importers import import_jsonl, read_judgement_records
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import create_user
from data.storage.engine import session_scope
from schemas.tables import Annotation, Unit


@pytest.fixture
def annotated(engine: Engine, tmp_path: Path) -> Engine:
    make_image(tmp_path / "images" / "cat.png")
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "items.jsonl", [item_record(0)]))
        alice = create_user(session, "alice", "password1", "annotator")
        bob = create_user(session, "bob", "password1", "annotator")
        scored = create_campaign(session, CampaignSpec("scored", "items", "mmie", overlap=2))
        paired = create_campaign(session, CampaignSpec("paired", "items", "pairwise"))
        units = {u.campaign_id: u for u in session.exec(select(Unit).order_by(Unit.id.desc()))}
        point, pair = units[scored.id], units[paired.id]
        session.add_all([
            Annotation(campaign_id=scored.id, unit_id=point.id, annotator_id=alice.id, score=2,
                       rationale="thin", seconds=12.5, revision=1, is_live=False),
            Annotation(campaign_id=scored.id, unit_id=point.id, annotator_id=alice.id, score=3,
                       rationale="thin but right", seconds=20.0, revision=2, meta={"k": 1}),
            Annotation(campaign_id=scored.id, unit_id=point.id, annotator_id=bob.id, score=6,
                       rationale="complete", seconds=31.0),
            Annotation(campaign_id=paired.id, unit_id=pair.id, annotator_id=bob.id,
                       preference="B", shown_order="BA", rationale="second is clearer",
                       seconds=41.5),
        ])  # fmt: skip
    return engine


def test_records_carry_annotator_time_revision_and_percent(annotated: Engine) -> None:
    with session_scope(annotated) as session:
        live = annotation_records(session, "scored")
        every = annotation_records(session, "scored", all_revisions=True)
        pairs = annotation_records(session, "paired")
    assert [(r.judge, r.score, r.score_percent, r.revision, r.seconds) for r in live] == [
        ("annotator:alice", 3, 50.0, 2, 20.0),
        ("annotator:bob", 6, 100.0, 1, 31.0),
    ]
    assert live[0].response_id == "item-0/m0" and live[0].meta == {"k": 1}
    assert live[0].judge_kind == "human" and live[0].campaign == "scored"
    assert len(every) == 3
    (pair,) = pairs
    assert (pair.pair, pair.shown, pair.preference) == (
        ("item-0/m0", "item-0/m1"), ("item-0/m1", "item-0/m0"), "B",
    )  # fmt: skip


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "parquet"])
def test_export_reads_back_as_the_same_records(
    annotated: Engine, tmp_path: Path, export_format: str
) -> None:
    for campaign in ("scored", "paired"):
        with session_scope(annotated) as session:
            records = annotation_records(session, campaign, all_revisions=True)
        path = tmp_path / f"{campaign}.{export_format}"
        assert write_judgement_records(records, path, export_format) == len(records)
        assert [record for _, record in read_judgement_records(path)] == records


FORMULAS = [
    '=HYPERLINK("http://127.0.0.1:8699/?"&A1,"see")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
    "'quoted already",
    "''=twice",
]


@pytest.mark.parametrize("where", ["rationale", "annotator", "raw_output"])
def test_csv_cells_never_start_like_a_formula_and_read_back_unchanged(
    annotated: Engine, tmp_path: Path, where: str
) -> None:
    """OWASP's CSV injection: a cell starting with = + - @ (tab, CR) gets a leading '."""
    with session_scope(annotated) as session:
        (record,) = annotation_records(session, "paired")
    texts = ("=x", "-x", "@x") if where == "annotator" else FORMULAS  # an id may start so too
    records = [
        record.model_copy(update={where: text, "meta": {"sample": n}})
        for n, text in enumerate(texts)
    ]
    path = tmp_path / "out.csv"
    write_judgement_records(records, path, "csv")
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row, original in zip(rows, records, strict=True):
        cell, text = row[where], getattr(original, where)
        assert cell == "'" + text and not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert rows[0]["score"] == "" and rows[0]["judge"] == "annotator:bob"  # others untouched
    assert [back for _, back in read_judgement_records(path)] == records
