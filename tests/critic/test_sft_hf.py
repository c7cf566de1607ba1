"""``export sft --format hf``: a Hugging Face ``datasets`` folder that reads back as the same
records as the JSON Lines file, that ``critic train --data`` trains on, and that TRL's
``SFTTrainer`` consumes as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from campaign_factory import write_short_template
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from annotate_app.cli.main import app
from critic.prompts import load_template
from critic.sft import SftFileError, SftOptions, SftRecord, export_campaign_sft, read_sft
from critic.train_config import TrainConfig
from critic.training import train_critic

runner = CliRunner()


def _both(engine: Engine, tmp_path: Path, **options: object) -> tuple[Path, Path]:
    template = load_template(write_short_template(tmp_path))
    chosen = SftOptions(**options)  # type: ignore[arg-type]
    jsonl, folder = tmp_path / "sft.jsonl", tmp_path / "sft_hf"
    export_campaign_sft(engine, "amb", jsonl, chosen, template=template)
    export_campaign_sft(engine, "amb", folder, chosen, template=template, sft_format="hf")
    return jsonl, folder


def _in_split_order(records: list[SftRecord]) -> list[SftRecord]:
    return [r for r in records if r.split == "train"] + [r for r in records if r.split == "eval"]


def _same_images(a: list[SftRecord], b: list[SftRecord]) -> None:
    for left, right in zip(a, b, strict=True):
        assert [Path(p).read_bytes() for p in left.images] == [
            Path(p).read_bytes() for p in right.images
        ]


@pytest.mark.parametrize("vision", [False, True])
def test_the_datasets_folder_reads_back_as_the_jsonl_records(
    engine: Engine, campaigns: dict, tmp_path: Path, vision: bool
) -> None:
    import datasets

    jsonl, folder = _both(engine, tmp_path, vision=vision, eval_fraction=0.34)
    from_file, from_folder = _in_split_order(read_sft(jsonl)), read_sft(folder)
    assert [(r.messages, r.meta) for r in from_folder] == [(r.messages, r.meta) for r in from_file]
    _same_images(from_file, from_folder)
    saved = datasets.load_from_disk(str(folder))
    assert set(saved) == {"train", "eval"}
    assert saved["train"].num_rows + saved["eval"].num_rows == len(from_file)
    assert saved["eval"].num_rows == sum(r.split == "eval" for r in from_file) > 0
    if vision:
        assert sum(len(r.images) for r in from_file) > 0
        assert isinstance(saved["train"].features["images"].feature, datasets.Image)
        row = next(row for row in saved["train"] if row["images"])
        assert row["images"][0].size  # a decoded PIL image, bytes embedded in the folder
    else:
        assert "images" not in saved["train"].column_names
    assert not (tmp_path / "sft_hf.part").exists()


def test_the_folder_is_self_contained(engine: Engine, campaigns: dict, tmp_path: Path) -> None:
    import shutil

    _jsonl, folder = _both(engine, tmp_path, vision=True)
    moved = tmp_path / "elsewhere" / "data"
    shutil.copytree(folder, moved)
    shutil.rmtree(folder)
    records = read_sft(moved)
    assert any(r.images for r in records) and all(
        Path(p).is_file() for r in records for p in r.images
    )


def test_export_sft_format_hf_from_the_command_line(
    engine: Engine, campaigns: dict, tmp_path: Path
) -> None:
    folder = tmp_path / "cli_hf"
    url = engine.url.render_as_string(hide_password=False)
    args = [
        "--db",
        url,
        "--json",
        "export",
        "sft",
        "--campaign",
        "amb",
        "-o",
        str(folder),
        "--format",
        "hf",
    ]
    result = runner.invoke(app, [*args, "--vision"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["records"] == len(read_sft(folder))
    again = runner.invoke(app, args)  # a folder this export wrote is replaced
    assert again.exit_code == 0, again.output
    bad = runner.invoke(app, [*args[:-1], "parquet"])
    assert bad.exit_code == 2 and "jsonl, hf" in bad.output
    other = tmp_path / "not_ours"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    refused = runner.invoke(app, [*args[:8], str(other), "--format", "hf"])
    assert refused.exit_code == 2 and "not a dataset folder" in refused.output, refused.output
    assert (other / "keep.txt").read_text() == "x"


def test_read_sft_names_the_bad_row_of_a_dataset(tmp_path: Path) -> None:
    import datasets

    rows = [{"messages": [{"role": "user", "content": "hi"}], "meta": "{}"}]
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}).save_to_disk(
        str(tmp_path / "bad")
    )
    with pytest.raises(SftFileError, match=r"bad \[train row 0\]: `messages` must be a list"):
        read_sft(tmp_path / "bad")
    rows = [{"messages": [{"role": "assistant", "content": "8"}] * 2, "meta": "{8"}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "one"))
    with pytest.raises(SftFileError, match=r"one \[train row 0\]: `meta` is not JSON text"):
        read_sft(tmp_path / "one")
    (tmp_path / "plain").mkdir()
    with pytest.raises(SftFileError, match="not a datasets folder"):
        read_sft(tmp_path / "plain")


def test_critic_train_reads_the_datasets_folder(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    _jsonl, folder = _both(engine, tmp_path, eval_fraction=0.34)
    config = TrainConfig(
        data=folder,
        base_model=tiny_llama,
        output_dir=tmp_path / "run",
        batch_size=4,
        max_steps=2,
        logging_steps=1,
        save_steps=2,
        evaluate=False,
    )
    result = train_critic(config)
    assert result.steps == 2 and result.train_tokens > 0
    # the command takes the folder for --data too
    url = engine.url.render_as_string(hide_password=False)
    args = ["--db", url, "critic", "train", "--data", str(folder), "--base-model", str(tiny_llama)]
    steps = ["--max-steps", "1", "--batch-size", "4", "--save-steps", "1", "--no-eval"]
    ran = runner.invoke(app, [*args, "-o", str(tmp_path / "cli_run"), *steps])
    assert ran.exit_code == 0, ran.output
    assert (tmp_path / "cli_run" / "final").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("vision", [False, True])
def test_trl_sft_trainer_consumes_the_folder_as_it_is(
    engine: Engine,
    campaigns: dict,
    tiny_llama: Path,
    tiny_llava: Path,
    tmp_path: Path,
    vision: bool,
) -> None:
    import datasets
    from trl import SFTConfig, SFTTrainer

    _jsonl, folder = _both(engine, tmp_path, vision=vision, eval_fraction=0.34)
    saved = datasets.load_from_disk(str(folder))
    config = SFTConfig(
        output_dir=str(tmp_path / "trl"),
        max_steps=2,
        per_device_train_batch_size=2,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        dataset_num_proc=None,
    )
    trainer = SFTTrainer(
        model=str(tiny_llava if vision else tiny_llama),
        args=config,
        train_dataset=saved["train"],
        eval_dataset=saved["eval"],
    )
    output = trainer.train()
    assert output.global_step == 2
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert len(losses) == 2 and all(loss > 0 for loss in losses)
