"""Label Studio in and out: ``export label-studio`` tasks, ``annotations import --from
label-studio``, and the round trip between them."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from importing_fixtures import item_record, make_image, snapshot, write_jsonl
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.io.exporters import annotation_records
from data.io.importers.label_studio import LabelStudioFields
from schemas.tables import Annotation, User

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "docs" / "label-studio"


def _cli(db_url: str, *args: str):
    return runner.invoke(app, ["--db", db_url, *args])


def _pair_label(annotator: str, n: int, preference: str, rationale: str, **extra: Any) -> dict:
    return {
        "judge": f"annotator:{annotator}", "judge_kind": "human", "protocol": "pairwise",
        "pair": [f"item-{n}/m0", f"item-{n}/m1"], "preference": preference,
        "rationale": rationale, **extra,
    }  # fmt: skip


def _score_label(annotator: str, n: int, m: int, score: float, rationale: str) -> dict:
    return {
        "judge": f"annotator:{annotator}", "judge_kind": "human", "protocol": "alignmmbench",
        "response_id": f"item-{n}/m{m}", "score": score, "rationale": rationale, "seconds": 7.5,
    }  # fmt: skip


PAIR_LABELS = [
    _pair_label("ext-ann", 0, "A", "the first names the cat", seconds=30,
                created_at="2026-11-01T10:00:00Z"),
    _pair_label("ext-bea", 0, "tie", "both say cat,\nneither the colour"),
    _pair_label("ext-ann", 1, "B", "the second is right"),
]  # fmt: skip
SCORE_LABELS = [
    _score_label("ext-ann", 0, 0, 7, "good, names the cat"),
    _score_label("ext-bea", 0, 0, 3, "misses the colour"),
    _score_label("ext-bea", 1, 1, 10, "complete and right"),
]


@pytest.fixture
def dataset(engine: Engine, db_url: str, tmp_path: Path) -> Path:
    make_image(tmp_path / "images" / "cat.png")
    items = [item_record(0), item_record(1, image=None)]
    result = _cli(db_url, "import", "jsonl", str(write_jsonl(tmp_path / "items.jsonl", items)))
    assert result.exit_code == 0, result.output
    return tmp_path


def _import_labels(db_url: str, folder: Path, campaign: str, labels: list[dict]) -> None:
    path = write_jsonl(folder / f"{campaign}.jsonl", labels)
    result = _cli(db_url, "annotations", "import", str(path), "--campaign", campaign)
    assert result.exit_code == 0, result.output


def _labels(engine: Engine, campaign: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Per (annotator, unit): score, preference, rationale, seconds and time."""
    with Session(engine) as session:
        return {
            (r.annotator or "", str(r.pair or r.response_id)): (
                r.score, r.preference, r.rationale, r.seconds, r.created_at
            )
            for r in annotation_records(session, campaign)
        }  # fmt: skip


@pytest.mark.parametrize("labels", [PAIR_LABELS, SCORE_LABELS], ids=["pairwise", "alignmmbench"])
@pytest.mark.parametrize("images", ["paths", "data"])
def test_export_then_import_gives_the_same_labels(
    engine: Engine, db_url: str, dataset: Path, labels: list[dict], images: str
) -> None:
    _import_labels(db_url, dataset, "made", labels)
    out = dataset / "ls" / "tasks.json"
    result = _cli(db_url, "export", "label-studio", "--campaign", "made", "-o", str(out),
                  "--annotations", "--images", images)  # fmt: skip
    assert result.exit_code == 0, result.output
    tasks = json.loads(out.read_text("utf-8"))
    assert len(tasks) == len(
        {(label.get("response_id"), str(label.get("pair"))) for label in labels}
    )
    shown = [path for task in tasks for path in task["data"]["images"]]
    assert shown, "item-0 has an image"
    if images == "paths":
        assert all((out.parent / path).is_file() for path in shown)
    else:
        assert all(path.startswith("data:image/png;base64,") for path in shown)
    result = _cli(db_url, "annotations", "import", str(out), "--from", "label-studio",
                  "--campaign", "back")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "0 external accounts added" in result.output  # the same external annotators
    assert _labels(engine, "back") == _labels(engine, "made")
    assert len(_labels(engine, "made")) == len(labels)
    again = _cli(db_url, "annotations", "import", str(out), "--from", "label-studio",
                 "--campaign", "back")  # fmt: skip
    assert again.exit_code == 0 and "nothing changed" in again.output, again.output


@pytest.mark.parametrize("protocol", ["pairwise", "alignmmbench", "mmie", "score"])
def test_exported_tasks_hold_every_field_the_shipped_config_names(
    engine: Engine, db_url: str, dataset: Path, protocol: str
) -> None:
    create = ["campaign", "create", "c", "--dataset", "items", "--protocol", protocol]
    if protocol == "score":
        create += ["--scale", "1:5:1"]
    result = _cli(db_url, *create)
    assert result.exit_code == 0, result.output
    out = dataset / "tasks.json"
    result = _cli(db_url, "export", "label-studio", "--campaign", "c", "-o", str(out))
    assert result.exit_code == 0, result.output
    config = (CONFIGS / f"{protocol}.xml").read_text("utf-8")
    tree = ElementTree.fromstring(config)
    variables = set(re.findall(r"\$(\w+)", config))
    tasks = json.loads(out.read_text("utf-8"))
    assert tasks
    for task in tasks:
        assert variables <= set(task["data"]), variables - set(task["data"])
    fields = LabelStudioFields()
    controls = {e.get("name"): e for e in tree.iter() if e.get("toName")}
    objects = {e.get("name") for e in tree.iter() if e.get("value", "").startswith("$")}
    wanted = {fields.rationale, fields.preference if protocol == "pairwise" else fields.score}
    assert set(controls) == wanted
    assert {c.get("toName") for c in controls.values()} <= objects
    if protocol != "pairwise":
        number = controls[fields.score]
        low, high = {"alignmmbench": (1, 10), "mmie": (0, 6), "score": (1, 5)}[protocol]
        assert (float(number.get("min", "")), float(number.get("max", ""))) == (low, high)
    else:
        choices = [c.get("value") for c in controls[fields.preference]]
        assert choices == ["A", "B", "tie"]


def _ls_task(task_id: int, annotations: list[dict], **data: Any) -> dict:
    return {"id": task_id, "data": {"question": "?", **data}, "annotations": annotations}


def _ls_annotation(completed_by: Any, results: list[dict], **extra: Any) -> dict:
    return {"id": 1, "completed_by": completed_by, "result": results, "was_cancelled": False,
            **extra}  # fmt: skip


def _result(name: str, kind: str, value: dict) -> dict:
    return {"from_name": name, "to_name": "question", "type": kind, "value": value}


def test_a_label_studio_export_of_its_own_becomes_labels(
    engine: Engine, db_url: str, dataset: Path
) -> None:
    tasks = [
        _ls_task(11, [
            _ls_annotation(7, [_result("verdict", "choices", {"choices": ["B"]}),
                               _result("why", "textarea", {"text": ["line one", "line two"]})],
                           lead_time=12.25),
            _ls_annotation({"id": 8, "email": "kim@lab.example"},
                           [_result("verdict", "choices", {"choices": ["A"]})],
                           was_cancelled=True),
        ], pair_a="item-0/m0", pair_b="item-0/m1", image="/data/local-files/?d=images/cat.png"),
    ]  # fmt: skip
    path = dataset / "export.json"
    path.write_text(json.dumps(tasks), "utf-8")
    result = _cli(db_url, "annotations", "import", str(path), "--from", "label-studio",
                  "--campaign", "ls", "--protocol", "pairwise", "--preference-name", "verdict",
                  "--rationale-name", "why")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _labels(engine, "ls") == {
        ("ls-7", "('item-0/m0', 'item-0/m1')"): (None, "B", "line one\nline two", 12.25, _any())
    }
    with Session(engine) as session:
        account = session.exec(select(User).where(User.name == "ls-7")).one()
        assert (account.external, account.active) == (True, False)
        meta = session.exec(select(Annotation.meta)).one()
        assert meta == {"label_studio_user": "user id 7"}


class _any:
    def __eq__(self, other: object) -> bool:  # the import time: not the point here
        return other is not None


def _bad(tmp: Path, tasks: Any) -> Path:
    path = tmp / "bad.json"
    path.write_text(json.dumps(tasks), "utf-8")
    return path


RATIONALE = _result("rationale", "textarea", {"text": ["a reason long enough to keep"]})


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        ([_ls_task(5, [_ls_annotation(1, [_result("preference", "choices",
                                                   {"choices": ["C"]}), RATIONALE])],
                   pair_a="item-0/m0", pair_b="item-0/m1", protocol="pairwise")],
         "task 0 (id 5), annotation 0: result `preference`: `value.choices`"),
        ([_ls_task(5, [_ls_annotation(None, [RATIONALE])], response_id="item-0/m0",
                   protocol="mmie")],
         "`completed_by`"),
        ([_ls_task(5, [_ls_annotation(1, [_result("score", "number", {"number": 11}),
                                          RATIONALE])],
                   response_id="item-0/m0", protocol="alignmmbench")],
         "task 0 (id 5), annotation 0: `score`"),
        ([_ls_task(6, [_ls_annotation(1, [RATIONALE])], protocol="mmie")],
         "task 0 (id 6): `data` names no unit"),
        ([_ls_task(6, [_ls_annotation(1, [RATIONALE])], response_id="item-0/m0",
                   protocol="mmie", images=["../outside.png"])],
         "leads outside the image root"),
        ([_ls_task(6, [_ls_annotation(1, [RATIONALE])], response_id="item-0/m0",
                   protocol="mmie", image="images/missing.png")],
         "which is not a file under"),
        ([_ls_task(6, [_ls_annotation(1, [RATIONALE])], response_id="item-0/m0",
                   protocol="mmie", images=["images/dog.png"])],
         "image images/dog.png is not an image of item 'item-0'"),
        ([_ls_task(6, [_ls_annotation(1, [RATIONALE])], response_id="item-1/m0",
                   protocol="mmie", images=["images/cat.png"])],
         "image images/cat.png is not an image of item 'item-1'"),
        ([_ls_task(7, [_ls_annotation({"email": "kim@a.example"}, [RATIONALE]),
                       _ls_annotation({"email": "kim@b.example"}, [RATIONALE])],
                   response_id="item-0/m0", protocol="mmie")],
         "task 0 (id 7), annotation 1: `completed_by` kim@b.example and kim@a.example"),
        ({"data": {}}, "a JSON list of tasks"),
    ],
)  # fmt: skip
def test_bad_exports_exit_2_naming_the_task_and_field_and_write_nothing(
    engine: Engine, db_url: str, dataset: Path, tasks: Any, expected: str
) -> None:
    make_image(dataset.parent / "outside.png")
    make_image(dataset / "images" / "dog.png", color=(10, 90, 200))
    before = snapshot(engine)
    path = _bad(dataset, tasks)
    result = _cli(db_url, "annotations", "import", str(path), "--from", "label-studio",
                  "--campaign", "bad")  # fmt: skip
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and expected in result.output, result.output
    assert snapshot(engine) == before


def test_round_trip_on_sqlite_and_postgresql(any_engine: Engine, tmp_path: Path) -> None:
    from functools import partial

    from data.io.exporters.label_studio import export_label_studio
    from data.io.importers import import_jsonl
    from data.io.importers.annotations import import_annotations
    from data.io.importers.label_studio import read_label_studio
    from data.storage.engine import session_scope

    make_image(tmp_path / "images" / "cat.png")
    with session_scope(any_engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "items.jsonl", [item_record(0)]))
        import_annotations(session, write_jsonl(tmp_path / "h.jsonl", PAIR_LABELS[:2]),
                           campaign="made")  # fmt: skip
    out = tmp_path / "ls" / "tasks.json"
    with session_scope(any_engine) as session:
        written = export_label_studio(session, "made", out, with_annotations=True)
    assert (written.tasks, written.annotations, written.images) == (1, 2, 1)
    with session_scope(any_engine) as session:
        read = partial(read_label_studio, session=session)
        summary = import_annotations(session, out, campaign="back", read=read)
    assert (summary.created, summary.annotations, summary.accounts_added) == (True, 2, 0)
    assert _labels(any_engine, "back") == _labels(any_engine, "made")


def test_a_rating_control_gives_the_score(engine: Engine, db_url: str, dataset: Path) -> None:
    tasks = [
        _ls_task(3, [_ls_annotation("ext-rater", [_result("stars", "rating", {"rating": 4}),
                                                  _result("rationale", "textarea",
                                                          {"text": "four of six"})])],
                 response_id="item-1/m1"),
    ]  # fmt: skip
    path = dataset / "rated.json"
    path.write_text(json.dumps(tasks), "utf-8")
    result = _cli(db_url, "annotations", "import", str(path), "--from", "label-studio",
                  "--campaign", "rated", "--protocol", "mmie", "--score-name", "stars")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _labels(engine, "rated") == {
        ("ext-rater", "item-1/m1"): (4.0, None, "four of six", 0.0, _any())
    }


def test_exporting_an_unknown_campaign_exits_2(db_url: str, tmp_path: Path) -> None:
    out = tmp_path / "tasks.json"
    result = _cli(db_url, "export", "label-studio", "--campaign", "nope", "-o", str(out))
    assert result.exit_code == 2 and "no campaign" in result.output.lower(), result.output
    assert not out.exists()


@pytest.mark.parametrize("images", ["paths", "data"])
def test_a_database_given_with_db_exports_the_images_of_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, images: str
) -> None:
    """With no data folder configured, ``--db`` names the images' folder too (``<stem>_files``
    beside the file): the export copies or inlines them from there, not from the default's."""
    monkeypatch.delenv("CRITIQUELAB_DATA_DIR", raising=False)
    monkeypatch.delenv("CRITIQUELAB_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    db_url = f"sqlite:///{tmp_path / 'own.db'}"
    make_image(tmp_path / "in" / "images" / "cat.png")
    items = write_jsonl(tmp_path / "in" / "items.jsonl", [item_record(0)])
    assert _cli(db_url, "import", "jsonl", str(items)).exit_code == 0
    create = ["campaign", "create", "c", "--dataset", "items", "--protocol", "pairwise"]
    assert _cli(db_url, *create).exit_code == 0
    out = tmp_path / "ls" / "tasks.json"
    result = _cli(db_url, "export", "label-studio", "--campaign", "c", "-o", str(out),
                  "--images", images)  # fmt: skip
    assert result.exit_code == 0, result.output
    ((shown,),) = [task["data"]["images"] for task in json.loads(out.read_text("utf-8"))]
    (stored,) = [p for p in (tmp_path / "own_files").rglob("*") if p.is_file()]
    if images == "data":
        assert shown.startswith("data:image/png;base64,")
    else:
        assert (out.parent / stored.relative_to(tmp_path / "own_files")).read_bytes() == (
            stored.read_bytes()
        )
    assert not (tmp_path / "critiquelab_files").exists()
