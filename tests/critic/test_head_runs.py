"""``critic train --objective head`` and ``critic score`` on a user's own data (issue 25 C): the
progress of the feature pass and a real tokens/s, a cap on prompt length that says what it left
out, the training output folder as ``--model``, targets recorded as fitted, and a warning when the
chosen L2 or layer lies at the edge of the grid searched."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from critic.head import ClassifierHead, FeatureMeter, grid_edges
from critic.modeling import ModelFolderError, load_critic
from critic.score import ScoreOptions, score_campaign
from critic.sft import SftOptions, export_campaign_sft, read_sft
from critic.training import TrainConfig, train_critic
from data.storage.engine import session_scope
from schemas.tables import Judgement

runner = CliRunner()


def _prompt_tokens(tiny_llama: Path, messages: list[dict]) -> int:
    """A prompt's tokens counted here, apart from the library: the chat template's text with the
    generation prompt, tokenized without special tokens."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama, local_files_only=True)
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_head_training_shows_progress_and_a_real_tokens_per_second(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = tmp_path / "sft.jsonl"
    export_campaign_sft(engine, "pairs", data, SftOptions(eval_fraction=0.34, seed=1))
    train = [r for r in read_sft(data) if r.split == "train"]
    tokens = sum(_prompt_tokens(tiny_llama, r.messages[:-1]) for r in train)
    args = ["critic", "train", "--objective", "head", "--data", str(data), "--base-model",
            str(tiny_llama), "--head-folds", "2", "--head-layers", "1",
            "--logging-steps", "1"]  # fmt: skip
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "text")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "train: features of" in line]
    # eval_batch_size 8: one line per batch, the last one at all the prompts and tokens
    assert len(lines) == math.ceil(len(train) / 8)
    assert lines[-1].startswith(f"train: features of {len(train)}/{len(train)} prompts, ")
    assert f"{tokens:,} tokens, " in lines[-1] and lines[-1].endswith("0m00s left")
    assert re.search(r"[\d.]+ rows/s, [\d,]+ tokens/s", lines[0])
    assert "train: stage cross-validation, settings 5/5" in result.stderr
    assert "nan tokens/s" not in result.stdout
    summary = runner.invoke(app, ["--json", *args, "-o", str(tmp_path / "json")])
    assert summary.exit_code == 0, summary.output
    figures = json.loads(summary.stdout)
    assert figures["train_tokens"] == tokens
    assert figures["tokens_per_second"] == pytest.approx(tokens / figures["seconds"])


def test_the_feature_meter_reports_rates_and_the_time_left() -> None:
    # a clock that advances 2 s per reading: started at 0, batches read at 2, 4, 6
    ticks = iter(range(0, 100, 2))
    logs: list[dict] = []
    meter = FeatureMeter(10, 1000, every=2, on_log=logs.append, clock=lambda: next(ticks))
    meter(4, 300)  # batch 1: not logged (every 2 batches)
    meter(4, 300)  # batch 2 at t = 2 s: 8 rows, 600 tokens
    meter(2, 400)  # batch 3, the last, at t = 4 s
    assert [log["rows"] for log in logs] == ["8/10", "10/10"]
    assert logs[0]["tokens_per_s"] == 300 and logs[0]["rows_per_s"] == 4
    assert logs[0]["seconds_left"] == pytest.approx(400 / 300)
    assert logs[1]["tokens"] == meter.tokens == 1000 and logs[1]["seconds_left"] == 0


def test_a_prompt_cap_leaves_long_prompts_out_of_training_and_scoring_and_counts_them(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = tmp_path / "sft.jsonl"
    export_campaign_sft(engine, "pairs", data, SftOptions(eval_fraction=0.34, seed=1))
    train = [r for r in read_sft(data) if r.split == "train"]
    lengths = sorted(_prompt_tokens(tiny_llama, r.messages[:-1]) for r in train)
    cap = lengths[len(lengths) // 2]
    over = sum(n > cap for n in lengths)
    assert 0 < over < len(lengths), "the cap must split the file"
    result = train_critic(
        TrainConfig(
            data=data, base_model=tiny_llama, output_dir=tmp_path / "head", objective="head",
            head_folds=2, head_layers=(1,), max_prompt_tokens=cap,
        )
    )  # fmt: skip
    info = json.loads((result.final_dir / "critic.json").read_text())
    assert result.too_long == info["too_long"] == over
    assert info["train_records"] == len(train) - over
    cv = json.loads((result.final_dir / "head_cv.json").read_text())
    assert len(cv) == len(train) - over
    # scoring with a cap: the long prompts are neither judged nor stored, and counted
    critic = load_critic(result.final_dir)
    capped = score_campaign(
        engine, "pairs", critic, ScoreOptions(judge_name="capped", max_prompt_tokens=cap)
    )
    with session_scope(engine) as session:
        stored = list(session.exec(select(Judgement).where(Judgement.judge == "capped")))
    assert capped.too_long + capped.stored == capped.units and capped.too_long > 0
    assert len(stored) == capped.stored
    for row in stored:
        assert row.usage["prompt_tokens"] <= cap
    again = score_campaign(engine, "pairs", critic, ScoreOptions(judge_name="capped"))
    assert (again.stored, again.too_long) == (capped.too_long, 0)  # judged once the cap is off
    with pytest.raises(Exception, match="max prompt tokens applies to objective head"):
        train_critic(
            TrainConfig(data=data, base_model=tiny_llama, output_dir=tmp_path / "gen",
                        max_prompt_tokens=cap)
        )  # fmt: skip


def test_the_cap_and_the_run_folder_through_the_commands(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    db = ["--db", engine.url.render_as_string(hide_password=False)]
    data = tmp_path / "sft.jsonl"
    export = ["export", "sft", "--campaign", "pairs", "-o", str(data), "--eval-fraction", "0.34"]
    assert runner.invoke(app, [*db, *export]).exit_code == 0
    train = ["critic", "train", "--objective", "head", "--data", str(data), "--base-model",
             str(tiny_llama), "-o", str(tmp_path / "run"), "--head-folds", "2",
             "--head-layers", "1", "--max-prompt-tokens", "1"]  # fmt: skip
    refused = runner.invoke(app, [*db, *train])
    assert refused.exit_code == 2
    assert "every training prompt is longer than --max-prompt-tokens (1)" in refused.stderr
    trained = runner.invoke(app, [*db, *train[:-2]])
    assert trained.exit_code == 0, trained.output
    # the training output folder is accepted as --model: its final/ is the critic
    score = ["critic", "score", "--model", str(tmp_path / "run"), "--campaign", "pairs",
             "--judge-name", "run-folder", "--max-prompt-tokens", "1"]  # fmt: skip
    scored = runner.invoke(app, [*db, *score])
    assert scored.exit_code == 0, scored.output
    assert "stored 0 judgements" in scored.stdout
    assert re.search(r"; \d+ left out, prompt over --max-prompt-tokens", scored.stdout)
    assert load_critic(tmp_path / "run").path == (tmp_path / "run" / "final").resolve()
    with pytest.raises(ModelFolderError, match="in the final folder of its output folder"):
        load_critic(tmp_path)


def test_annotator_targets_on_single_verdicts_record_the_consensus(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    # one annotator per record: the annotators' shares are the consensus label, exactly
    exported = tmp_path / "sft.jsonl"
    export_campaign_sft(engine, "pairs", exported, SftOptions(eval_fraction=0.34, seed=1))
    data = tmp_path / "single.jsonl"
    lines = []
    for line in exported.read_text().splitlines():
        record = json.loads(line)
        record["meta"]["labels"] = {"solo": record["meta"]["label"]}
        lines.append(json.dumps(record))
    data.write_text("\n".join(lines) + "\n")
    config = dict(base_model=tiny_llama, objective="head", head_folds=2, head_layers=(1,))
    single = train_critic(
        TrainConfig(data=data, output_dir=tmp_path / "a", head_targets="annotators", **config)
    )
    info = json.loads((single.final_dir / "critic.json").read_text())
    assert (info["targets"], info["targets_asked"]) == ("consensus", "annotators")
    (note,) = [str(n) for n in single.notes if "head targets" in str(n)]
    assert "one verdict" in note and info["notes"].count(note) == 1
    consensus = train_critic(TrainConfig(data=data, output_dir=tmp_path / "c", **config))
    assert torch.equal(load_critic(single.final_dir).head.weight,
                       load_critic(consensus.final_dir).head.weight)  # fmt: skip
    assert not [n for n in consensus.notes if "head targets" in str(n)]


def _head(l2: float, layer: int) -> ClassifierHead:
    empty = torch.zeros(1)
    return ClassifierHead(["A", "B"], empty, empty, empty, empty, l2=l2, layer=layer)


@pytest.mark.parametrize(
    ("l2", "grid", "edge"),
    [(0.1, (0.01, 0.1, 1.0), None), (0.01, (1.0, 0.01, 0.1), "smallest"),
     (1.0, (0.01, 1.0), "largest"), (1.0, (1.0,), None)],
)  # fmt: skip
def test_an_l2_at_the_edge_of_its_grid_is_said(
    l2: float, grid: tuple[float, ...], edge: str | None
) -> None:
    edges = grid_edges(_head(l2, 0), grid, (0,), depth=4)
    assert edges.l2 == edge and edges.layer is None
    notes = [note.render(lambda name: "--" + name.replace("_", "-")) for note in edges.notes()]
    if edge is None:
        assert notes == []
    else:
        (note,) = notes
        assert f"the chosen L2 is the {edge} of the grid searched" in note
        assert "may lie beyond it: widen --head-l2" in note


@pytest.mark.parametrize(
    ("layer", "layers", "edge"),
    [(2, (2, 3), "shallowest"), (3, (2, 3), "deepest"), (0, (2, 0), None), (1, (1, 3), None),
     (3, (2, 3, 4), None), (4, (2, 4), None), (2, (2,), None)],
)  # fmt: skip
def test_a_layer_at_the_edge_of_those_searched_is_said_unless_the_model_ends_there(
    layer: int, layers: tuple[int, ...], edge: str | None
) -> None:
    # a model of 4 decoder layers: 0 = the last = 4; beyond layer 1 or 4 there is nothing
    edges = grid_edges(_head(0.1, layer), (0.01, 0.1, 1.0), layers, depth=4)
    assert edges.layer == edge and edges.l2 is None
    assert [("layer is the " + edge) in str(n) for n in edges.notes()] == ([True] if edge else [])


def test_grid_edges_reach_the_user_through_critic_json_and_the_command(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = tmp_path / "sft.jsonl"
    export_campaign_sft(engine, "pairs", data, SftOptions(eval_fraction=0.34, seed=1))
    # one L2 to choose from is no grid; layer 1 of 2 searched with the last one is the model's own
    # edge: nothing to say. A grid whose both ends are searched says which end won.
    args = ["critic", "train", "--objective", "head", "--data", str(data), "--base-model",
            str(tiny_llama), "--head-folds", "2", "--head-layers", "1,2"]  # fmt: skip
    quiet = runner.invoke(app, [*args, "--head-l2", "0.5", "-o", str(tmp_path / "one")])
    assert quiet.exit_code == 0, quiet.output
    assert "note:" not in quiet.stderr
    info = json.loads((tmp_path / "one" / "final" / "critic.json").read_text())
    assert info["grid_edges"]["l2"] is None and info["notes"] == []
    wide = runner.invoke(app, [*args, "--head-l2", "0.001,1000", "-o", str(tmp_path / "two")])
    assert wide.exit_code == 0, wide.output
    info = json.loads((tmp_path / "two" / "final" / "critic.json").read_text())
    edge = "smallest" if info["l2"] == 0.001 else "largest"
    assert info["grid_edges"]["l2"] == edge
    assert f"note: head: the chosen L2 is the {edge} of the grid searched (0.001, 1000)" in (
        wide.stderr.replace("\n", " ")
    )
    assert "widen --head-l2" in wide.stderr.replace("\n", " ")
    bad = runner.invoke(app, [*args, "--head-l2", "0.1,-1", "-o", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "--head-l2" in bad.stderr
