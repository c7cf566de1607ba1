"""data.readmodels.frames: a campaign as the judgement frame, adjudications as overrides; DB-mode
CLI."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from annotate_app.cli.main import app
from calibration import CalibrationOptions, calibrate
from data.io.exporters import model_judgement_records
from data.readmodels.frames import (
    FRAME_COLUMNS,
    campaign_judgement_frame,
    campaign_judges,
    campaign_rationales,
    campaign_reference_overrides,
)
from data.storage.campaign_lookup import CampaignNotFound, get_campaign
from data.storage.engine import session_scope
from schemas.protocols import ALIGNMMBENCH, PAIRWISE
from schemas.records import JUDGEMENT_FRAME_COLUMNS
from schemas.tables import (
    Adjudication,
    Annotation,
    Campaign,
    Dataset,
    Item,
    Judgement,
    Pair,
    Response,
    Unit,
    User,
)


def _build(engine: Engine) -> dict[str, int]:
    """Two items × two models; a pointwise campaign (2 annotators, one retired revision, one
    adjudication, two judges, one unparsed) and a pairwise campaign (both orders judged)."""
    with session_scope(engine) as s:
        users = [User(name=n, password_hash="x", role="annotator") for n in ("ann", "bob", "rev")]
        dataset = Dataset(name="d", benchmark="alignmmbench")
        s.add_all([*users, dataset])
        s.flush()
        items = [
            Item(
                dataset_id=dataset.id,
                item_id=f"i{k}",
                benchmark="alignmmbench",
                task="OCR" if k == 0 else "Chart",
                category="c",
                group="g",
                question="q",
                content_sha256="h",
                meta={"source": f"s{k}"},
            )
            for k in range(2)
        ]
        s.add_all(items)
        s.flush()
        responses = [
            Response(
                response_id=f"i{k}/{m}",
                item_pk=items[k].id,
                model=m,
                content="a",
                content_sha256="h",
            )
            for k in range(2)
            for m in ("m1", "m2")
        ]
        s.add_all(responses)
        s.flush()
        point = Campaign(name="points", dataset_id=dataset.id, protocol="alignmmbench", overlap=2)
        pairs = Campaign(name="pairs", dataset_id=dataset.id, protocol="pairwise", overlap=2)
        s.add_all([point, pairs])
        s.flush()
        units = [Unit(campaign_id=point.id, item_pk=r.item_pk, response_pk=r.id) for r in responses]
        pair = Pair(
            item_pk=items[0].id, response_a_pk=responses[0].id, response_b_pk=responses[1].id
        )
        s.add_all([*units, pair])
        s.flush()
        pair_unit = Unit(campaign_id=pairs.id, item_pk=items[0].id, pair_pk=pair.id)
        s.add(pair_unit)
        s.flush()
        for u, unit in enumerate(units):
            for a, user in enumerate(users[:2]):
                s.add(
                    Annotation(
                        campaign_id=point.id,
                        unit_id=unit.id,
                        annotator_id=user.id,
                        score=float(3 + u + a),
                        rationale=f"r{u}{a}",
                        revision=2 if u == a == 0 else 1,
                    )
                )
            s.add(
                Judgement(
                    judge="gpt-4",
                    protocol="alignmmbench",
                    unit_key=f"r:{responses[u].response_id}",
                    response_pk=responses[u].id,
                    score=float(4 + u),
                    rationale="j",
                )
            )
            s.add(
                Judgement(
                    judge="critic",
                    protocol="alignmmbench",
                    unit_key=f"r:{responses[u].response_id}",
                    response_pk=responses[u].id,
                    score=None if u == 0 else 5.0,
                    parse_status="unparsed" if u == 0 else "ok",
                )
            )
        s.add(
            Annotation(
                campaign_id=point.id,
                unit_id=units[0].id,
                annotator_id=users[0].id,
                score=9.0,
                rationale="old",
                revision=1,
                is_live=False,
            )
        )
        s.flush()
        s.add(
            Adjudication(
                campaign_id=point.id, unit_id=units[1].id, reviewer_id=users[2].id, score=7.0
            )
        )
        s.add(
            Adjudication(
                campaign_id=point.id,
                unit_id=units[2].id,
                reviewer_id=users[2].id,
                score=1.0,
                is_live=False,
            )
        )
        for user, label, shown in ((users[0], "A", "AB"), (users[1], "B", "BA")):
            s.add(
                Annotation(
                    campaign_id=pairs.id,
                    unit_id=pair_unit.id,
                    annotator_id=user.id,
                    preference=label,
                    shown_order=shown,
                    rationale="p",
                )
            )
        key = "p:i0/m1|i0/m2"
        for shown, verdict in (("AB", "A"), ("BA", "A")):
            s.add(
                Judgement(
                    judge="gpt-4",
                    protocol="pairwise",
                    unit_key=key,
                    pair_pk=pair.id,
                    shown_order=shown,
                    preference=verdict,
                )
            )
        return {"points": point.id, "pairs": pairs.id}


def test_pointwise_campaign_frame(any_engine):
    ids = _build(any_engine)
    with session_scope(any_engine) as s:
        frame = campaign_judgement_frame(s, ids["points"])
        overrides = campaign_reference_overrides(s, ids["points"])
        assert campaign_judges(s, ids["points"]) == ["critic", "gpt-4"]
        assert get_campaign(s, "points").id == ids["points"]
        assert get_campaign(s, ids["pairs"]).name == "pairs"
        assert get_campaign(s, str(ids["pairs"])).name == "pairs"  # --campaign 2 from the CLI
        with pytest.raises(CampaignNotFound, match="known campaigns: pairs, points"):
            get_campaign(s, "nope")
        with pytest.raises(CampaignNotFound, match="no campaign with id 99 "):
            get_campaign(s, 99)
    assert list(frame.columns[: len(FRAME_COLUMNS)]) == list(FRAME_COLUMNS)
    assert tuple(c for c in JUDGEMENT_FRAME_COLUMNS if c != "rationale") == FRAME_COLUMNS
    assert "rationale" not in frame.columns  # the texts are read only for listed units
    humans = frame[frame["kind"] == "human"]
    assert len(humans) == 8  # the retired revision is not there
    assert set(humans["rater"]) == {"annotator:ann", "annotator:bob"}
    assert len(frame[frame["kind"] == "model"]) == 8
    first = frame[(frame["unit"] == "r:i0/m1") & (frame["rater"] == "annotator:ann")].iloc[0]
    assert (first["value"], first["task"], first["model"], first["item_id"]) == (
        3.0,
        "OCR",
        "m1",
        "i0",
    )
    assert first["source"] == "s0"  # item meta, usable with --by
    assert overrides == {"r:i0/m2": 7.0}
    report = calibrate(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0), overrides=overrides)
    assert report.result.reference.n_adjudicated == 1
    assert report.result.judges["critic"].coverage == 0.75


def test_pairwise_campaign_frame(any_engine):
    ids = _build(any_engine)
    with session_scope(any_engine) as s:
        frame = campaign_judgement_frame(s, ids["pairs"], judges=["gpt-4"])
    assert set(frame["unit"]) == {"p:i0/m1|i0/m2"}
    model = frame[frame["kind"] == "model"].sort_values("shown_order")
    assert list(model["shown_order"]) == ["AB", "BA"]
    result = calibrate(frame, CalibrationOptions(PAIRWISE, bootstrap=0)).result
    assert result.judges["gpt-4"].metric("consistency").value == 1.0
    assert result.reference.n_units == 1  # no majority among 2 → tie


def test_cli_database_mode(engine, db_url, tmp_path):
    _build(engine)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app,
        [
            "--db",
            db_url,
            "calibrate",
            "--campaign",
            "points",
            "--bootstrap",
            "20",
            "--by",
            "task",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    assert set(summary["judges"]) == {"critic", "gpt-4"}
    assert set(summary["judges"]["gpt-4"]["by"]["task"]) == {"OCR", "Chart"}
    result = CliRunner().invoke(app, ["--db", db_url, "calibrate", "--campaign", "nope"])
    assert result.exit_code == 2 and "no campaign called 'nope' (known" in result.output


def test_a_judge_of_another_protocol_is_neither_offered_nor_read(any_engine):
    """The dashboard offers campaign_judges and calibrates each one it offers: a judge that
    scored the campaign's responses under another protocol has no rows in the frame."""
    ids = _build(any_engine)
    with session_scope(any_engine) as s:
        response = s.execute(select(Response).order_by(Response.id)).scalars().first()
        s.add(
            Judgement(
                judge="mmie-judge",
                protocol="mmie",
                unit_key=f"r:{response.response_id}",
                response_pk=response.id,
                score=4.0,
            )
        )
    with session_scope(any_engine) as s:
        assert campaign_judges(s, ids["points"]) == ["critic", "gpt-4"]
        frame = campaign_judgement_frame(s, ids["points"])
        exported = model_judgement_records(s, campaign_name="points")
    assert "mmie-judge" not in set(frame["rater"])
    assert {record.judge for record in exported} == {"critic", "gpt-4"}  # export judgments too
    assert len(exported) == len(frame[frame["kind"] == "model"])


def _statements(engine: Engine) -> list[str]:
    """The SQL statements ``engine`` runs from now on (appended as they run)."""
    from sqlalchemy import event

    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def _reads_rationales(sql: str) -> bool:
    return "annotation.rationale" in sql or "judgement.rationale" in sql


def test_rationales_are_read_for_the_listed_units_only_in_one_query(any_engine):
    ids = _build(any_engine)
    seen = _statements(any_engine)
    with session_scope(any_engine) as s:
        rows = campaign_rationales(s, ids["points"], ["r:i0/m2", "r:i1/m1"], judges=["gpt-4"])
        pairs = campaign_rationales(s, ids["pairs"], ["p:i0/m1|i0/m2"])
    reading = [sql for sql in seen if _reads_rationales(sql)]
    assert len(reading) == 2  # one per call: answers and judgements together
    assert "UNION ALL" in reading[0]
    assert list(rows.columns) == ["unit", "rater", "kind", "value", "shown_order", "rationale"]
    assert set(rows["unit"]) == {"r:i0/m2", "r:i1/m1"}
    humans = rows[rows["kind"] == "human"]
    assert list(
        zip(humans["unit"], humans["rater"], humans["value"], humans["rationale"], strict=True)
    ) == [
        ("r:i0/m2", "annotator:ann", 4.0, "r10"),
        ("r:i0/m2", "annotator:bob", 5.0, "r11"),
        ("r:i1/m1", "annotator:ann", 5.0, "r20"),
        ("r:i1/m1", "annotator:bob", 6.0, "r21"),
    ]  # live answers only, humans first, in the order they were stored
    models = rows[rows["kind"] == "model"]
    assert set(models["rater"]) == {"gpt-4"} and list(models["rationale"]) == ["j", "j"]
    assert set(pairs["unit"]) == {"p:i0/m1|i0/m2"}
    assert sorted(pairs.loc[pairs["kind"] == "human", "shown_order"]) == ["AB", "BA"]
    assert list(pairs.loc[pairs["kind"] == "model", "value"]) == ["A", "A"]


def test_a_campaign_calibration_reads_the_rationales_of_the_listed_units_only(engine):
    """The frame has no rationale column; the report's disagreements get their texts from one
    read restricted to the units they list."""
    from annotate_app.campaign_calibration import calibrate_campaign, load_campaign

    ids = _build(engine)
    seen = _statements(engine)
    calibration = calibrate_campaign(
        engine, load_campaign(engine, ids["points"]), bootstrap=0, max_disagreements=1
    )
    assert "rationale" not in calibration.source.frame.columns
    reading = [sql for sql in seen if _reads_rationales(sql)]
    assert len(reading) == 1
    details = calibration.report.details
    listed = calibration.report.listed_units()
    # By hand from _build: references (live humans' mean, a live adjudication overriding it)
    # i0/m1 3.5, i0/m2 7 (adjudicated), i1/m1 5.5, i1/m2 6.5; the rule's default threshold is
    # 20% of the 1-10 scale, 1.8. gpt-4 (4, 5, 6, 7) misses by 0.5, 2, 0.5, 0.5 and critic
    # (unparsed, 5, 5, 5) by 2, 0.5, 1.5: each judge's one disagreement is i0/m2.
    assert listed == ["r:i0/m2"]
    assert not any(_reads_rationales(sql) for sql in seen[:-1])  # the frame has no texts
    for name, judge in details.items():
        (row,) = judge.disagreements.to_dict("records")
        assert row["unit"] in listed
        index = int(row["unit"][3]) * 2 + int(row["unit"][-1]) - 1  # r:i<k>/m<m>
        assert [text for _, _, text in row["human_rationales"]] == [f"r{index}0", f"r{index}1"]
        expected = ["j"] if name == "gpt-4" else [""]
        assert [text for _, _, text in row["judge_rationales"]] == expected
    assert listed == sorted(  # both judges' one largest disagreement, each unit once
        {
            row["unit"]
            for judge in details.values()
            for row in judge.disagreements.to_dict("records")
        }
    )


def test_the_frame_holds_one_string_object_per_distinct_rater_order_and_status(any_engine):
    ids = _build(any_engine)
    with session_scope(any_engine) as s:
        frame = campaign_judgement_frame(s, ids["points"])
    for kind in ("human", "model"):  # read by two queries, shared within each
        rows = frame[frame["kind"] == kind]
        for column in ("rater", "shown_order", "parse_status"):
            values = list(rows[column])
            assert all(isinstance(v, str) for v in values)
            assert len({id(v) for v in values}) == len(set(values)), (kind, column)
