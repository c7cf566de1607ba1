"""PandaLM's real human labels imported as a campaign (``annotations import``) calibrate exactly as
the same files do in file mode, and reproduce PandaLM's published GPT-3.5 row.

The dataset here has one item per PandaLM pair (``idx``), its two responses and the pair; the
three annotators' labels become a closed campaign with three external accounts.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.storage.engine import session_scope
from schemas.tables import Campaign, User

runner = CliRunner()


def _dataset(pandalm_dir: Path, path: Path) -> Path:
    items = json.loads((pandalm_dir / "testset-v1.json").read_text())
    lines = []
    for item in items:  # a few responses in the file are JSON true, not text: kept as "True"
        first, second = item["cmp_key"].split("_", 1)
        idx = item["idx"]
        lines.append({
            "item_id": f"pandalm-{idx}",
            "benchmark": "generic",
            "question": f"{item['instruction']}\n\n{item['input']}".strip(),
            "responses": [
                {"response_id": f"{idx}/1", "model": first, "content": str(item["response1"])},
                {"response_id": f"{idx}/2", "model": second, "content": str(item["response2"])},
            ],
            "pairs": [[f"{idx}/1", f"{idx}/2"]],
        })  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return path


def _run(db: str, *args: str) -> str:
    result = runner.invoke(app, ["--db", db, *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_imported_pandalm_labels_calibrate_as_the_files_do(
    engine, db_url, pandalm_dir, pandalm_files, tmp_path
):
    _run(db_url, "import", "jsonl", str(_dataset(pandalm_dir, tmp_path / "pandalm-dataset.jsonl")))
    output = _run(db_url, "annotations", "import", str(pandalm_files["humans"]), "--campaign",
                  "pandalm-humans")  # fmt: skip
    assert "999 units, 2997 labels by 3 annotators (3 external accounts added), overlap 3" in output
    for key in ("gpt", "pandalm"):
        _run(db_url, "judgments", "import", str(pandalm_files[key]))
    options = ["--protocol", "pairwise", "--unparsed", "tie", "--bootstrap", "100"]
    campaign_json, files_json = tmp_path / "campaign.json", tmp_path / "files.json"
    _run(
        db_url, "calibrate", "--campaign", "pandalm-humans", *options, "--json", str(campaign_json)
    )
    files = [
        arg
        for key in ("humans", "gpt", "pandalm")
        for arg in ("--judgments", str(pandalm_files[key]))
    ]
    _run(db_url, "calibrate", *files, *options, "--json", str(files_json))
    from_campaign = json.loads(campaign_json.read_text())
    from_files = json.loads(files_json.read_text())
    for summary in (from_campaign, from_files):
        summary["versions"].pop("data_sha256")
        summary["human"]["loo"].pop("by_annotator")
        for block in summary["judges"].values():
            block["loo"].pop("by_annotator")
    assert from_campaign["judges"] == from_files["judges"]
    assert from_campaign["human"] == from_files["human"]
    # PandaLM's README: GPT-3.5 accuracy 71.07, macro P/R/F1 58.79 / 57.36 / 57.55
    gpt = from_campaign["judges"]["gpt-3.5-turbo"]
    keys = ("acc_with_tie", "precision_macro", "recall_macro", "f1_macro")
    assert tuple(round(gpt[k] * 100, 2) for k in keys) == (71.07, 58.79, 57.36, 57.55)
    with session_scope(engine) as session:
        campaign = session.exec(select(Campaign).where(Campaign.name == "pandalm-humans")).one()
        assert (campaign.status, campaign.overlap) == ("closed", 3)
        externals = session.exec(select(User.name).where(User.external)).all()
        assert sorted(externals) == ["1", "2", "3"]
