"""``judgments import``: model judgements checked against protocol and units, idempotent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from importing_fixtures import item_record, make_image, snapshot, write_jsonl
from sqlalchemy.engine import Engine
from sqlmodel import select

from annotate_app.cli.context import cli_flag
from data.io.exporters import model_judgement_records, write_judgement_records
from data.io.importers import InvalidRecord, import_jsonl, import_judgements, read_judgement_records
from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.tables import Judgement, Pair


def _dataset(engine: Engine, folder: Path) -> None:
    make_image(folder / "images" / "cat.png")
    records = [item_record(n, models=3) for n in range(2)]
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(folder / "items.jsonl", records))


def _lines() -> list[dict[str, Any]]:
    return [
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "alignmmbench",
         "response_id": "item-0/m0", "score": 8, "rationale": "good", "raw_output": "Rating: 8",
         "parse_status": "ok", "prompt_id": "alignmmbench-zh@1",
         "created_at": "2026-11-29T07:00:00Z", "meta": {"latency": 1.5}, "temperature": 0},
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "alignmmbench",
         "response_id": "item-0/m1", "score": None, "raw_output": "no idea",
         "parse_status": "unparsed", "prompt_id": "alignmmbench-zh@1"},
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "pairwise",
         "pair": ["item-0/m0", "item-0/m1"], "shown": ["item-0/m1", "item-0/m0"],
         "preference": "B", "rationale": "second is better", "raw_output": "[[A]]",
         "prompt_id": "pairwise@1", "meta": {"sample": 2}},
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "pairwise",
         "pair": ["item-1/m1", "item-1/m2"], "preference": "tie", "raw_output": "[[C]]",
         "prompt_id": "pairwise@1"},
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "mmie",
         "response_id": "item-1/m2", "score": 3, "score_percent": 50.0, "prompt_id": "mmie@1"},
    ]  # fmt: skip


def _import(engine: Engine, path: Path, **options: Any):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        return import_judgements(session, path, **options)


def test_import_stores_units_orders_and_meta_and_is_idempotent(
    any_engine: Engine, tmp_path: Path
) -> None:
    _dataset(any_engine, tmp_path)
    path = write_jsonl(tmp_path / "gpt4.jsonl", _lines())
    summary = _import(any_engine, path)
    assert (summary.added, summary.unchanged, summary.pairs_added) == (5, 0, 1)
    with session_scope(any_engine) as session:
        rows = {(j.unit_key, j.shown_order): j for j in session.exec(select(Judgement))}
        sources = sorted(session.exec(select(Pair.source)))
    first = rows[("r:item-0/m0", "AB")]
    assert (first.score, first.meta) == (8, {"latency": 1.5, "temperature": 0})
    assert first.created_at.replace(tzinfo=None).isoformat() == "2026-11-29T07:00:00"
    assert (rows[("r:item-0/m1", "AB")].score, rows[("r:item-0/m1", "AB")].parse_status) == (
        None, "unparsed",
    )  # fmt: skip
    swapped = rows[("p:item-0/m0|item-0/m1", "BA")]
    assert (swapped.preference, swapped.sample, swapped.meta) == ("B", 2, {})
    assert sources == ["import", "import", "import"]  # two from the items file, one new
    before = snapshot(any_engine)
    again = _import(any_engine, path)
    assert (again.added, again.unchanged) == (0, 5)
    assert {t: r for t, r in snapshot(any_engine).items() if t != "audit_event"} == {
        t: r for t, r in before.items() if t != "audit_event"
    }


def test_changed_judgement_is_refused_unless_update(engine: Engine, tmp_path: Path) -> None:
    _dataset(engine, tmp_path)
    path = write_jsonl(tmp_path / "gpt4.jsonl", _lines())
    _import(engine, path)
    changed = _lines()
    changed[0]["score"] = 7
    write_jsonl(path, changed)
    with pytest.raises(InvalidRecord) as error:
        _import(engine, path)
    assert str(error.value) == (
        f"{path}:1: judge 'gpt-4' already has a different judgement of r:item-0/m0 "
        "(prompt 'alignmmbench-zh@1'): import with update to replace it"
    )
    assert error.value.render(cli_flag).endswith("import with --update to replace it")
    summary = _import(engine, path, update_changed=True)
    assert (summary.updated, summary.unchanged) == (1, 4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"score": 11}, "`score` is 11, but alignmmbench scores are integers 1–10. Fix the line "
         "or import with protocol score scale 0:11."),
        ({"score": "eight"}, "`score` is 'eight' (str), but it must be a number (or null)"),
        ({"protocol": "likert"}, "`protocol` is 'likert' (str); use one of alignmmbench, mmie, "
         "pairwise, score"),
        ({"response_id": "item-9/m0"}, "`response_id` names 'item-9/m0', which is not in the "
         "database: import the dataset with its responses first"),
        ({"judge_kind": "human"}, "`judge_kind` is 'human': judgments import loads model "
         "judgements; human labels are collected in the app"),
        ({"score": None}, "`score` is missing but `parse_status` is 'ok': give the value or set "
         "parse_status to 'unparsed'"),
        ({"parse_status": "weird"}, "`parse_status` is 'weird' (str); use one of ok, unparsed, "
         "out_of_scale, error, skipped"),
        # was accepted and stored
        ({"expected_score": -5000}, "`expected_score` is -5000, but an expected score (Σ p(s)·s) "
         "of alignmmbench lies from 1 to 10: fix the line"),
        ({"expected_score": 10.5}, "`expected_score` is 10.5, but an expected score (Σ p(s)·s) "
         "of alignmmbench lies from 1 to 10: fix the line"),
    ],
)  # fmt: skip
def test_bad_lines_name_line_and_field_and_change_nothing(
    engine: Engine, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    _dataset(engine, tmp_path)
    lines = _lines()
    lines[2].update(change) if "pair" in change else lines[0].update(change)
    path = write_jsonl(tmp_path / "gpt4.jsonl", [lines[1], lines[0], lines[3]])
    before = snapshot(engine)
    with pytest.raises(InvalidRecord) as error:
        _import(engine, path)
    assert str(error.value) == f"{path}:2: {message}"
    assert snapshot(engine) == before


def test_pair_errors_and_protocol_override(engine: Engine, tmp_path: Path) -> None:
    _dataset(engine, tmp_path)
    cases = [
        ({"pair": ["item-0/m0", "item-1/m0"], "shown": None}, "`pair` names responses to two "
         "different items: a pair compares two answers to the same item"),
        ({"pair": ["item-0/m1", "item-0/m0"], "shown": None}, "`pair` is stored in the other "
         "order: swap the two ids (and map A/B) to the stored canonical order"),
        ({"shown": ["item-0/m0", "item-0/m2"]}, "`shown` is ['item-0/m0', 'item-0/m2'], but it "
         "must be the pair ['item-0/m0', 'item-0/m1'] in either order"),
        ({"preference": "C"}, "`preference` is 'C' (str); use one of A, B, tie"),
    ]  # fmt: skip
    for change, message in cases:
        line = {**_lines()[2], **change}
        path = write_jsonl(tmp_path / "pairs.jsonl", [line])
        with pytest.raises(InvalidRecord) as error:
            _import(engine, path)
        assert str(error.value) == f"{path}:1: {message}"
    eleven = {**_lines()[0], "score": 11}
    path = write_jsonl(tmp_path / "eleven.jsonl", [eleven])
    assert _import(engine, path, protocol="score", scale=(0, 11, 1)).added == 1
    with session_scope(engine) as session:
        assert session.exec(select(Judgement.protocol, Judgement.score)).one() == ("score", 11)


def test_score_lines_take_the_given_scale_and_a_missing_one_names_the_option(
    engine: Engine, tmp_path: Path
) -> None:
    """A scale given without forcing the protocol is the scale of the lines that say `score`
    (it was ignored); without one, the problem names the option the way the front end does."""
    _dataset(engine, tmp_path)
    scored = {**_lines()[0], "protocol": "score", "score": 4}
    path = write_jsonl(tmp_path / "scored.jsonl", [scored])
    with pytest.raises(InvalidRecord) as missing:
        _import(engine, path)
    assert missing.value.render(cli_flag) == (
        f"{path}:1: protocol 'score' needs a scale: give --scale MIN:MAX[:STEP]"
    )
    assert _import(engine, path, scale=(1, 5, 1)).added == 1
    with session_scope(engine) as session:
        assert session.exec(select(Judgement.protocol, Judgement.score)).one() == ("score", 4)


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "parquet"])
def test_import_export_import_round_trip(
    engine: Engine, tmp_path: Path, export_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dataset(engine, tmp_path)
    _import(engine, write_jsonl(tmp_path / "gpt4.jsonl", _lines()))
    exported = tmp_path / f"export.{export_format}"
    with session_scope(engine) as session:
        records = model_judgement_records(session)
        write_judgement_records(records, exported, export_format)
    assert [record for _, record in read_judgement_records(exported)] == records
    fresh = make_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    upgrade_database(fresh)
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "fresh-data"))
    _dataset(fresh, tmp_path)
    assert _import(fresh, exported).added == 5
    with session_scope(fresh) as session:
        assert model_judgement_records(session) == records
    fresh.dispose()
