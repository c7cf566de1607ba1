"""``import alignmmbench``: the real metadata file, response files, images, and their errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from importing_fixtures import make_image, snapshot, write_jsonl
from sqlalchemy.engine import Engine
from sqlmodel import select

from annotate_app.cli.context import cli_flag
from data.io.importers import InvalidRecord, MissingImages, import_alignmmbench
from data.storage.engine import session_scope
from schemas.benchmarks import ALIGNMMBENCH_TASKS
from schemas.tables import Item, Response


def _metadata_line(question_id: str, **changes: object) -> dict[str, object]:
    line = {
        "question_id": question_id, "image_path": "images/000000000.jpg",
        "history": [{"user": "描述图片", "assistant": "一只猫"}], "prompt": "它是什么颜色？",
        "ref_answer": "红色", "task": "Coherence", "category": "Dialogue Context",
    }  # fmt: skip
    line.update(changes)
    return line


def test_real_metadata_imports_completely_with_allow_missing_images(
    engine: Engine, alignmmbench_metadata: Path
) -> None:
    metadata = alignmmbench_metadata
    lines = [json.loads(line) for line in metadata.read_text(encoding="utf-8").splitlines()]
    with pytest.raises(MissingImages) as error, session_scope(engine) as session:
        import_alignmmbench(session, metadata)
    assert (error.value.count, error.value.files) == (4978, 1054)
    assert str(error.value) == (
        f"{metadata}:1: `question[0].image` images/000000000.jpg not found: 4,978 image "
        "reference(s) to 1,054 file(s) are missing; they were looked for under "
        f"{metadata.parent}. Give images root where the images are, or import the text "
        "alone with allow missing images"
    )
    assert error.value.render(cli_flag).endswith(
        "Give --images-root where the images are, or import the text alone with "
        "--allow-missing-images"
    )
    with session_scope(engine) as session:
        summary = import_alignmmbench(session, metadata, allow_missing_images=True)
    assert (summary.items_added, summary.images_missing) == (4978, 4978)
    with session_scope(engine) as session:
        items = list(session.exec(select(Item)))
    assert len(items) == len(lines) == 4978
    assert Counter(item.task for item in items) == Counter(line["task"] for line in lines)
    assert {item.task for item in items} == set(ALIGNMMBENCH_TASKS)
    assert all(ALIGNMMBENCH_TASKS[item.task] == item.category for item in items)
    groups = {item.item_id: item.group for item in items}
    assert all(groups[f"amb-{line['question_id']}"] == line["question_id"].split("-")[0]
               for line in lines)  # fmt: skip
    assert len(set(groups.values())) == len({line["question_id"].split("-")[0] for line in lines})
    with_history = next(i for i in items if i.history)
    line = next(x for x in lines if f"amb-{x['question_id']}" == with_history.item_id)
    assert with_history.history[0] == {"role": "user", "content": line["history"][0]["user"]}
    assert with_history.question[-1] == {"type": "text", "text": line["prompt"]}
    assert with_history.reference == line["ref_answer"]


def test_responses_and_images_from_a_small_copy(engine: Engine, tmp_path: Path) -> None:
    make_image(tmp_path / "bench" / "images" / "000000000.jpg", fmt="JPEG")
    metadata = write_jsonl(tmp_path / "meta.jsonl", [_metadata_line("00000000-0"),
                                                       _metadata_line("00000000-1")])  # fmt: skip
    answers = write_jsonl(tmp_path / "qwen.jsonl", [
        {"question_id": "00000000-1", "predict": "红色", "latency": 0.4},
    ])  # fmt: skip
    with session_scope(engine) as session:
        summary = import_alignmmbench(
            session, metadata, responses=[(answers, "qwen")], images_root=tmp_path / "bench"
        )
    assert (summary.items_added, summary.responses_added, summary.images_stored) == (2, 1, 1)
    with session_scope(engine) as session:
        response = session.exec(select(Response)).one()
        item = session.get(Item, response.item_pk)
    assert (response.response_id, response.model, response.content, response.meta) == (
        "amb-00000000-1/qwen", "qwen", "红色", {"latency": 0.4},
    )  # fmt: skip
    assert item is not None and item.group == "00000000"
    assert item.question[0]["image"].endswith(".jpg")


@pytest.mark.parametrize(
    ("metadata_change", "answer", "where", "message"),
    [
        ({"task": "Poetry"}, None, "meta:2", "`task` is 'Poetry', which is not an AlignMMBench "
         "task (Description, Recognition, Counting, OCR, Meme, Knowledge, Reasoning, Chart, "
         "Problem, Comparison, Writing, Coherence, Incoherence): fix the line or import it as "
         '"benchmark": "generic"'),
        ({"category": "Perception & Understanding"}, None, "meta:2", "`category` is 'Perception "
         "& Understanding', but AlignMMBench task Coherence belongs to 'Dialogue Context': fix "
         "the category or leave it out"),
        ({"history": [{"user": "hi"}]}, None, "meta:2", "`history[0]` must be an object with "
         "string `user` and `assistant`"),
        ({}, {"question_id": "99999999-0", "predict": "x"}, "answers:2", "`question_id` "
         "'99999999-0' is not in the metadata META: check that the responses belong to this "
         "benchmark file"),
        ({}, {"question_id": "00000000-0", "predict": 7}, "answers:2", "`predict` is 7, but it "
         "must be the model's answer as a string"),
        ({}, {"question_id": "00000000-0", "predict": "again"}, "answers:2", "duplicate "
         "question_id '00000000-0' (also on line 1): one answer per question for model qwen"),
    ],
)  # fmt: skip
def test_errors_name_the_file_line_and_field_and_write_nothing(
    engine: Engine, tmp_path: Path, metadata_change: dict[str, object],
    answer: dict[str, object] | None, where: str, message: str,
) -> None:  # fmt: skip
    make_image(tmp_path / "images" / "000000000.jpg", fmt="JPEG")
    metadata = write_jsonl(tmp_path / "meta.jsonl", [
        _metadata_line("00000000-0"), _metadata_line("00000000-1", **metadata_change),
    ])  # fmt: skip
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"question_id": "00000000-0", "predict": "红色"}, *([answer] if answer else []),
    ])  # fmt: skip
    before = snapshot(engine)
    with pytest.raises(InvalidRecord) as error, session_scope(engine) as session:
        import_alignmmbench(session, metadata, responses=[(answers, "qwen")])
    files = {"meta": str(metadata), "answers": str(answers)}
    name, line = where.split(":")
    assert str(error.value) == f"{files[name]}:{line}: " + message.replace("META", str(metadata))
    assert snapshot(engine) == before
