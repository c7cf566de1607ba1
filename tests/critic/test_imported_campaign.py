"""A campaign brought in by ``annotations import`` works exactly as one annotated in the app.

A campaign is annotated through the queue (lease, submit, as the annotation page does), its labels
are exported and imported back as a second campaign; then ``export sft``, ``calibrate``, ``critic
score``, the adjudication queue and the calibration page give the same results on both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from annotate_app.auth import USER_KEY
from annotate_app.cli.main import app
from annotate_app.navigation import APP_DIR
from data.queue import next_unit, submit
from data.services.adjudication import adjudication_queue
from data.services.users import create_user
from data.storage.engine import session_scope
from schemas.tables import Campaign

runner = CliRunner()
ANNOTATORS = ("alice", "bob", "carol")
ITEMS = [
    {
        "item_id": f"q{i}",
        "benchmark": "alignmmbench",
        "task": ("OCR", "Counting")[i % 2],
        "question": f"How many apples in picture {i}?",
        "responses": [
            {"response_id": f"q{i}/x", "model": "model-x", "content": f"{i + 2} apples"},
            {"response_id": f"q{i}/y", "model": "model-y", "content": f"{i + 7} apples"},
        ],
        "pairs": [[f"q{i}/x", f"q{i}/y"]],
    }
    for i in range(6)
]


def _cli(engine: Engine, *args: str):
    result = runner.invoke(app, ["--db", engine.url.render_as_string(hide_password=False), *args])
    assert result.exit_code == 0, result.output
    return result


def _annotate_in_the_app(engine: Engine, campaign: str) -> None:
    """Every annotator leases and submits units until the queue is empty (as the page does)."""
    with session_scope(engine) as session:
        campaign_id = session.exec(select(Campaign.id).where(Campaign.name == campaign)).one()
    for offset, name in enumerate(ANNOTATORS):
        with session_scope(engine) as session:
            annotator = create_user(session, f"{name}-{campaign}", "a long password 1", "annotator")
        while True:
            with session_scope(engine) as session:
                unit = next_unit(session, campaign_id, annotator.id)
                if unit is None:
                    break
                x_first = unit.responses[0].response_id.endswith("/x")
                disagree = offset == 2 and unit.item_id in ("q1", "q4")
                if unit.protocol.is_pointwise:
                    good = x_first
                    answer = {"score": (8 if good else 3) + offset - (4 if disagree else 0)}
                else:
                    better = "A" if x_first else "B"
                    answer = {"preference": "tie" if disagree else better}
                submit(session, unit.assignment_id, annotator.id, rationale=f"{name} looked at "
                       f"{unit.item_id} carefully", seconds=10.0 + offset, **answer)  # fmt: skip


@pytest.fixture(params=["pairwise", "alignmmbench"])
def campaigns(request, engine: Engine, tmp_path: Path) -> tuple[str, str]:
    """(app campaign, imported copy) of one protocol, on the same dataset."""
    protocol = request.param
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in ITEMS), "utf-8")
    _cli(engine, "import", "jsonl", str(data))
    _cli(engine, "campaign", "create", "app", "--dataset", "data", "--protocol", protocol,
         "--overlap", "3", "--rationale-min", "10")  # fmt: skip
    _annotate_in_the_app(engine, "app")
    labels = tmp_path / "labels.jsonl"
    _cli(engine, "export", "annotations", "--campaign", "app", "--format", "jsonl", "-o",
         str(labels))  # fmt: skip
    # the labels come back under other annotator names, as labels made elsewhere would
    renamed = [json.loads(line) for line in labels.read_text().splitlines()]
    for record in renamed:
        record["annotator"] = record["annotator"].replace("-app", "-ext")
        record["judge"] = "annotator:" + record["annotator"]
    labels.write_text("".join(json.dumps(r) + "\n" for r in renamed), "utf-8")
    _cli(engine, "annotations", "import", str(labels), "--campaign", "imported")
    return "app", "imported"


def _without_names(value: object) -> object:
    """The value with campaign and annotator names taken out (they differ by construction)."""
    if isinstance(value, dict):
        return {
            _without_names(k): _without_names(v)
            for k, v in value.items()
            if k not in ("campaign", "by_annotator")
        }
    if isinstance(value, list):
        return [_without_names(v) for v in value]
    if isinstance(value, str):
        return value.replace("-app", "").replace("-ext", "").replace("imported", "app")
    return value


def test_sft_calibrate_score_adjudication_and_page_match(
    engine: Engine, campaigns: tuple[str, str], tiny_llama: Path, tmp_path: Path, monkeypatch
) -> None:
    outputs = {}
    for name in campaigns:
        sft = tmp_path / f"{name}.sft.jsonl"
        _cli(engine, "export", "sft", "--campaign", name, "-o", str(sft), "--seed", "3")
        outputs[name] = [json.loads(line) for line in sft.read_text().splitlines()]

    # the same records; their order follows the units' ids, which the import gives in the order
    # the labels file lists them (the app's serving order, random within ties)
    def by_unit(records: list[dict]) -> list[object]:
        return sorted(_without_names(records), key=lambda record: record["meta"]["unit_key"])

    assert outputs["app"] and by_unit(outputs["app"]) == by_unit(outputs["imported"])

    # the critic judges the imported campaign's units (keys shared with the app campaign)
    _cli(engine, "critic", "score", "--model", str(tiny_llama), "--campaign", "imported",
         "--judge-name", "tiny", "--max-new-tokens", "4")  # fmt: skip
    summaries = {}
    for name in campaigns:
        out = tmp_path / f"{name}.cal.json"
        _cli(engine, "calibrate", "--campaign", name, "--bootstrap", "50", "--json", str(out))
        summaries[name] = json.loads(out.read_text())
        summaries[name]["versions"].pop("data_sha256")
    assert "tiny" in summaries["imported"]["judges"]
    assert _without_names(summaries["app"]) == _without_names(summaries["imported"])

    queues = {}
    with session_scope(engine) as session:
        for name in campaigns:
            campaign = session.exec(select(Campaign).where(Campaign.name == name)).one()
            queues[name] = [
                (entry.unit_key, entry.disagreement, entry.answers, entry.summary)
                for entry in adjudication_queue(session, campaign.id)
            ]
        reviewer = create_user(session, "rev", "a long password 1", "reviewer")
    # most disputed first in both; units of equal dispute follow their ids, which differ
    for queue in queues.values():
        assert [entry[1] for entry in queue] == sorted((entry[1] for entry in queue), reverse=True)
    assert queues["app"] and sorted(queues["app"]) == sorted(queues["imported"])

    monkeypatch.setenv("CRITIQUELAB_DB", engine.url.render_as_string(hide_password=False))
    page = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=120)
    page.session_state[USER_KEY] = reviewer
    page.run()
    page = page.switch_page("pages/calibration_dashboard.py")
    page.run()
    options = page.selectbox[0].options
    page.selectbox[0].select_index(next(i for i, o in enumerate(options) if o.startswith("imp")))
    page.number_input[0].set_value(50)
    page.run()
    assert not page.exception, page.exception
    assert any(s.value == "Judges against the reference" for s in page.subheader)
