"""The human reference leaves out, by itself, answers a reviewer rejected and annotators held or
retired in the campaign; ``calibrate --json``, its HTML report and ``export sft`` name who was
left out and why (issue 24 §5, §6)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from sqlalchemy.engine import Engine
from sqlmodel import col, select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data import queue
from data.services.gold import change_standing
from data.storage.campaign_lookup import unit_key_map
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import Annotation, Judgement, Unit
from tests.data.test_queue import RATIONALE, build_campaign

runner = CliRunner()
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs/spec/calibration-result.schema.json"


def _annotated_campaign(engine: Engine) -> tuple[int, list[int], int]:
    """6 units, K = 5, five annotators answer every unit (ann4 answers 1 everywhere); one judge
    scores every unit; ann0 held, ann1 retired; one of ann2's answers rejected. Returns the
    campaign, the annotators and the rejected answer's unit."""
    campaign_id, annotators = build_campaign(engine, items=3, overlap=5, annotators=5)
    rejected_unit = 0
    for n, annotator in enumerate(annotators):
        while True:
            with session_scope(engine) as session:
                view = queue.next_unit(session, campaign_id, annotator)
                if view is None:
                    break
                score = 1 if n == 4 else 5 + (view.unit_id + n) % 3
                answer = queue.submit(
                    session, view.assignment_id, annotator, score=score, rationale=RATIONALE
                )
                session.flush()
                if n == 2 and not rejected_unit:
                    rejected_unit = view.unit_id
                    rejected_answer = answer.id
    with session_scope(engine) as session:
        for unit in session.exec(select(Unit).where(Unit.campaign_id == campaign_id)):
            key = unit_key_map(session, campaign_id)[unit.id]  # type: ignore[index]
            session.add(
                Judgement(
                    judge="judge-x",
                    protocol="alignmmbench",
                    unit_key=key,
                    response_pk=unit.response_pk,
                    score=6,
                )
            )
        change_standing(session, campaign_id, "ann0", "hold")
        change_standing(session, campaign_id, "ann1", "retire")
        queue.reject_answer(session, rejected_answer, comment="Off by two.")  # type: ignore[arg-type]
    return campaign_id, annotators, rejected_unit


def test_calibrate_json_and_report_name_the_annotators_left_out(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    _annotated_campaign(engine)
    out, html = tmp_path / "out.json", tmp_path / "report.html"
    command = ["--db", db_url, "calibrate", "--campaign", "camp-alignmmbench", "--bootstrap", "0"]
    result = runner.invoke(
        app, [*command, "--exclude-annotator", "ann4", "--json", str(out), "--html", str(html)]
    )
    assert result.exit_code == 0, result.output
    reference = json.loads(out.read_text("utf-8"))["reference"]
    assert reference["consensus"] == "mean"
    assert sorted(reference["excluded_annotators"]) == [
        "annotator:ann0",
        "annotator:ann1",
        "annotator:ann4",
    ]
    assert reference["exclusion_reasons"] == {
        "annotator:ann0": "held",
        "annotator:ann1": "retired",
        "annotator:ann4": "listed",
    }
    assert sorted(reference["weights"]) == ["annotator:ann2", "annotator:ann3"]
    assert reference["rejected_answers"] == 1  # ann2's, counted where it was left out
    schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.loads(out.read_text())))
    assert not errors, errors[:3]
    report = html.read_text("utf-8")
    assert "<dt>Answers a reviewer rejected (left out)</dt><dd>1</dd>" in report
    assert "annotator:ann0 (excluded: held)" in report
    assert "annotator:ann0 (held)" in report and "annotator:ann4 (listed)" in report
    rows = json.loads(out.read_text("utf-8"))["annotators"]["rows"]
    by_name = {row["annotator"]: row for row in rows}
    assert by_name["annotator:ann2"]["n"] == 5  # the rejected answer is not read at all
    assert by_name["annotator:ann0"]["excluded"] and not by_name["annotator:ann3"]["excluded"]


def test_sft_export_leaves_out_rejected_answers_and_held_annotators(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    _, _, rejected_unit = _annotated_campaign(engine)
    out = tmp_path / "sft.jsonl"
    result = runner.invoke(
        app,
        [
            "--db", db_url, "export", "sft", "--campaign", "camp-alignmmbench",
            "--output", str(out), "--per-annotator",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "left out: ann0 (held), ann1 (retired)" in result.stdout
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    annotators = [name for record in records for name in record["meta"]["annotators"]]
    assert sorted(set(annotators)) == ["ann2", "ann3", "ann4"]
    assert annotators.count("ann2") == 5 and annotators.count("ann3") == 6
    with session_scope(engine) as session:
        rejected_key = unit_key_map(session, 1)[rejected_unit]
    on_rejected_unit = [
        r["meta"]["labels"] for r in records if r["meta"]["unit_key"] == rejected_key
    ]
    assert on_rejected_unit and all(set(labels) == {"ann3", "ann4"} for labels in on_rejected_unit)


def test_a_rejected_answer_revised_then_accepted_is_counted_once_then_not_at_all(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """The revision of a rejected answer waits for review: still one answer out of the
    reference (not two, the rejected one and its revision), in ``reference.rejected_answers``
    and in ``campaign status``'s rejected column; accepted, it counts again and none is out."""
    campaign_id, annotators, unit = _annotated_campaign(engine)
    with session_scope(engine) as session:
        rejected = session.exec(
            select(Annotation).where(
                Annotation.unit_id == unit,
                Annotation.annotator_id == annotators[2],
                col(Annotation.is_live),
            )
        ).one()
        revision = queue.revise(
            session, stored_id(rejected), annotators[2], score=6, rationale=RATIONALE
        )
        session.flush()
        revision_id = stored_id(revision)

    def counted() -> tuple[int, str]:
        out = tmp_path / "out.json"
        command = ["--db", db_url, "calibrate", "--campaign", "camp-alignmmbench"]
        result = runner.invoke(app, [*command, "--bootstrap", "0", "--json", str(out)])
        assert result.exit_code == 0, result.output
        status = runner.invoke(app, ["--db", db_url, "campaign", "status", "camp-alignmmbench"])
        assert status.exit_code == 0, status.output
        ann2 = next(line for line in status.output.splitlines() if line.startswith("ann2\t"))
        return json.loads(out.read_text("utf-8"))["reference"]["rejected_answers"], ann2

    rejected_answers, ann2 = counted()
    assert rejected_answers == 1
    assert ann2.split("\t")[1:3] == ["5", "1"]  # submitted (counted), rejected
    with session_scope(engine) as session:
        queue.accept_answer(session, revision_id)
    rejected_answers, ann2 = counted()
    assert rejected_answers == 0
    assert ann2.split("\t")[1:3] == ["6", "0"]


def test_max_disagreements_reaches_the_report_and_a_negative_one_is_refused(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    _annotated_campaign(engine)
    command = ["--db", db_url, "calibrate", "--campaign", "camp-alignmmbench", "--bootstrap", "0"]
    refused = runner.invoke(app, [*command, "--max-disagreements", "-1"])
    assert refused.exit_code == 2, refused.output
    assert "--max-disagreements is -1; give a whole number from 0 to" in refused.output
    html = tmp_path / "report.html"
    listed = runner.invoke(app, [*command, "--max-disagreements", "0", "--html", str(html)])
    assert listed.exit_code == 0, listed.output
