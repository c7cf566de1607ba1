"""``export sft``: human judgements as training conversations, split by item with a seed."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from annotate_app.cli.main import app
from calibration.pairwise import LABELS
from calibration.reference import consensus
from calibration.scale import Scale
from critic.parsing import parse_judgement
from critic.sft import (
    SftFileError,
    SftOptions,
    SftRecord,
    _consensus_value,
    export_campaign_sft,
    read_sft,
    write_sft,
)
from schemas.protocols import ALIGNMMBENCH, PAIRWISE, get_protocol, to_canonical

runner = CliRunner()


def _records(
    engine: Engine, tmp_path: Path, campaign: str = "amb", **options: object
) -> list[dict]:
    path = tmp_path / f"{campaign}.jsonl"
    export_campaign_sft(engine, campaign, path, SftOptions(**options))  # type: ignore[arg-type]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_consensus_records_split_by_item_with_targets_in_the_protocol_format(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    records = _records(engine, tmp_path, eval_fraction=0.34, seed=3)
    assert len(records) == 12  # one per annotated unit
    splits: dict[str, set[str]] = {}
    for record in records:
        splits.setdefault(record["meta"]["item_id"], set()).add(record["meta"]["split"])
    assert all(len(s) == 1 for s in splits.values())  # no item in both splits
    assert sum(s == {"eval"} for s in splits.values()) == 2  # round(6 × 0.34)
    for record in records:
        meta, (system, user, answer) = record["meta"], record["messages"]
        assert (system["role"], user["role"], answer["role"]) == ("system", "user", "assistant")
        assert isinstance(user["content"], str) and record["images"] == []
        assert (
            meta["annotators"] == ["alice", "bob", "carol"]
            and meta["prompt_id"] == "alignmmbench-en-text@1"
        )
        parsed = parse_judgement(answer["content"], ALIGNMMBENCH)
        assert parsed.status == "ok" and parsed.value == meta["label"]
        labels = list(meta["labels"].values())
        if meta["label_source"] == "adjudicated":
            assert meta["label"] == 9 and meta["unit_key"] == "r:item-0/model-x"
        else:  # mean of the three scores, which here is a scale point; bob's rationale is closest
            assert meta["label"] == sum(labels) / 3 and "(bob)" in parsed.rationale
    again = _records(engine, tmp_path, eval_fraction=0.34, seed=3)
    assert [r["meta"]["split"] for r in again] == [r["meta"]["split"] for r in records]


def test_per_annotator_records_keep_each_label_and_rationale(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    records = _records(engine, tmp_path, per_annotator=True)
    assert len(records) == 36
    for record in records:
        (annotator,) = record["meta"]["annotators"]
        parsed = parse_judgement(record["messages"][-1]["content"], ALIGNMMBENCH)
        assert parsed.value == record["meta"]["labels"][annotator] == record["meta"]["label"]
        assert parsed.rationale.endswith(f"({annotator})")


def test_pairwise_targets_are_in_the_shown_order(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    consensus = _records(engine, tmp_path, campaign="pairs", seed=1)
    assert {record["meta"]["label"] for record in consensus} == {"A"}
    orders = set()
    for record in consensus + _records(engine, tmp_path, campaign="pairs", per_annotator=True):
        meta = record["meta"]
        swapped = meta["shown"] != meta["pair"]
        orders.add(swapped)
        shown = parse_judgement(record["messages"][-1]["content"], PAIRWISE).value
        assert to_canonical(shown, swapped=swapped) == meta["label"] == "A"
        first_shown = record["messages"][1]["content"].split("## Response A\n")[1]
        assert first_shown.startswith("I count") and meta["shown"][0].split("/")[1] in (
            "model-x",
            "model-y",
        )
    assert orders == {True, False}


def test_vision_records_carry_images_by_path(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    records = _records(engine, tmp_path, vision=True)
    with_images = [r for r in records if r["images"]]
    assert len(with_images) == 4  # two items with an image × two responses
    for record in with_images:
        segments = record["messages"][1]["content"]
        assert sum(s["type"] == "image" for s in segments) == len(record["images"]) == 1
        assert Path(record["images"][0]).is_absolute() and Path(record["images"][0]).is_file()


def test_export_sft_writes_the_same_bytes_to_a_stream_as_to_a_file(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    path = tmp_path / "amb.jsonl"
    on_disk = export_campaign_sft(engine, "amb", path, SftOptions(vision=True))
    binary, text = io.BytesIO(), io.StringIO()
    streamed = export_campaign_sft(engine, "amb", binary, SftOptions(vision=True))
    export_campaign_sft(engine, "amb", text, SftOptions(vision=True))
    assert binary.getvalue() == path.read_bytes() == text.getvalue().encode("utf-8")
    assert on_disk.path == path and streamed.path is None
    assert streamed.records == on_disk.records == len(path.read_bytes().splitlines())
    assert not list(tmp_path.glob("*.part"))  # nothing left beside the file


def test_read_sft_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path.write_text(json.dumps(good) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(SftFileError, match=r"bad.jsonl:2: not valid JSON"):
        read_sft(path)
    path.write_text(json.dumps({"messages": good["messages"][::-1]}) + "\n", encoding="utf-8")
    with pytest.raises(SftFileError, match=r"bad.jsonl:1: the last message must be the assistant"):
        read_sft(path)
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)  # a named pipe blocked for ever, /dev/zero was read until memory ran out
    for special, what in ((pipe, "a pipe"), (Path("/dev/zero"), "a device")):
        with pytest.raises(SftFileError, match=f"{special}: is {what}, not a regular file"):
            read_sft(special)


def test_export_sft_command(engine: Engine, campaigns: dict, tmp_path: Path) -> None:
    url = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "cli.jsonl"
    result = runner.invoke(
        app,
        [
            "--db",
            url,
            "--json",
            "export",
            "sft",
            "--campaign",
            "amb",
            "-o",
            str(out),
            "--eval-fraction",
            "0.5",
            "--seed",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["records"], summary["train"], summary["eval"], summary["items"]) == (
        12,
        6,
        6,
        6,
    )
    assert len(out.read_text().splitlines()) == 12
    bad = runner.invoke(app, ["--db", url, "export", "sft", "--campaign", "nope", "-o", str(out)])
    assert bad.exit_code == 2 and "no campaign called 'nope'" in bad.output
    wrong = runner.invoke(
        app,
        [
            "--db",
            url,
            "export",
            "sft",
            "--campaign",
            "amb",
            "-o",
            str(out),
            "--consensus",
            "majority",
        ],
    )
    assert wrong.exit_code == 2 and "use mean, median" in wrong.output
    fraction = ["export", "sft", "--campaign", "amb", "-o", str(out), "--eval-fraction", "1.5"]
    refused = runner.invoke(app, ["--db", url, *fraction])
    # the library says "eval fraction"; the command names its flag
    assert refused.exit_code == 2
    assert "error: --eval-fraction is 1.5; give a number in [0, 1)" in refused.output


@pytest.mark.parametrize(
    ("protocol", "labels", "rule", "expected"),
    [
        ("pairwise", ["A", "A", "B", "tie"], "majority", "tie"),  # 2 of 4 is not a majority
        ("pairwise", ["A", "A", "B"], "majority", "A"),
        ("alignmmbench", [6.0, 7.0], "mean", 7.0),  # 6.5 rounds half up, as in METRICS.md
        ("alignmmbench", [2.0, 9.0, 9.0], "median", 9.0),
    ],
)
def test_the_training_target_is_the_reference_calibration_grades_against(
    protocol: str, labels: list, rule: str, expected: object
) -> None:
    """A critic trained on one label and graded against another would be scored unfairly."""
    chosen = get_protocol(protocol)
    pairwise = not chosen.is_pointwise
    matrix = np.array([[LABELS.index(v) if pairwise else v] for v in labels], dtype=float)
    code = consensus(matrix, rule, pairwise=pairwise)  # type: ignore[arg-type]
    reference = LABELS[int(code[0])] if pairwise else float(Scale.of(chosen).round(code)[0])
    assert _consensus_value(labels, chosen, rule) == reference == expected


def test_a_failure_while_making_records_leaves_no_file(tmp_path: Path) -> None:
    """The records come from a generator (a large campaign's are not held); if making one fails,
    neither the file nor its ``.part`` is left, and the error is the caller's."""
    made: list[int] = []

    def records(fail: bool) -> Iterator[SftRecord]:
        for n, split in enumerate(["train", "eval", "train"]):
            made.append(n)
            turns = [{"role": "user", "content": str(n)}, {"role": "assistant", "content": "[[7]]"}]
            yield SftRecord(messages=turns, meta={"split": split})
        if fail:
            raise ValueError("a unit whose record cannot be made")

    path = tmp_path / "out" / "sft.jsonl"
    counts = write_sft(records(fail=False), path)
    assert (counts.records, counts.train, counts.eval) == (3, 2, 1)
    assert [r.meta["split"] for r in read_sft(path)] == ["train", "eval", "train"]
    made.clear()
    with pytest.raises(ValueError, match="cannot be made"):
        write_sft(records(fail=True), tmp_path / "failed.jsonl")
    assert made == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no failed.jsonl(.part)


def test_a_model_reference_and_excluded_annotators(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    plain = _records(engine, tmp_path, campaign="pairs")
    fitted = _records(engine, tmp_path, campaign="pairs", consensus="dawid-skene")
    assert len(fitted) == len(plain)
    assert {r["meta"]["label_source"] for r in fitted} <= {"consensus", "adjudicated"}
    assert all(r["meta"]["label"] in LABELS for r in fitted)
    everyone = sorted({name for r in plain for name in r["meta"]["annotators"]})
    left = _records(engine, tmp_path, campaign="pairs", exclude_annotators=(everyone[0],))
    assert everyone[0] not in {name for r in left for name in r["meta"]["annotators"]}
    scores = _records(engine, tmp_path, consensus="mace")
    assert all(float(r["meta"]["label"]) == round(float(r["meta"]["label"])) for r in scores)
    with pytest.raises(ValueError, match="use majority, dawid-skene, mace"):
        _records(engine, tmp_path, campaign="pairs", consensus="mean")
    # a name with no label leaves out nobody: refused, not a silent no-op
    with pytest.raises(ValueError, match=r"annotator\(s\) nobody have no labels in campaign"):
        _records(engine, tmp_path, campaign="pairs", exclude_annotators=("nobody",))
