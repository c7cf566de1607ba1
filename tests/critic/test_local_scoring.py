"""``critic score``: batched local judging into the database, resumable, both orders, expected
scores checked against separate unbatched forward passes."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from campaign_factory import build_mmie_campaign, write_short_template
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from critic.judging import Answered, judgement_row, plan_jobs, run_jobs
from critic.local import (
    GenerationOptions,
    encode_prompt,
    expected_scores,
    generate,
    generate_measured,
)
from critic.modeling import load_critic
from critic.parsing import parse_judgement
from critic.prompts import builtin_template, load_template
from critic.score import ScoreOptions, score_campaign
from data.readmodels.critic_io import campaign_units, image_resolver
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.protocols import ALIGNMMBENCH, PAIRWISE, to_canonical
from schemas.tables import PARSE_STATUSES, Judgement

runner = CliRunner()
SHORT = GenerationOptions(max_new_tokens=6, batch_size=4)


def _judgements(engine: Engine, judge: str) -> list[Judgement]:
    with session_scope(engine) as session:
        return list(
            session.exec(select(Judgement).where(Judgement.judge == judge).order_by(Judgement.id))
        )


def _prompts(engine: Engine, template, campaign: str = "amb"):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        found = get_campaign(session, campaign)
        units, protocol = campaign_units(session, stored_id(found)), campaign_protocol(found)
    jobs = plan_jobs(units, protocol, template, vision=False, resolve_image=image_resolver(engine))
    return [job.prompt for job in jobs]


def test_scores_every_unit_with_raw_output_and_status_then_resumes(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    critic = load_critic(tiny_llama)
    template = load_template(write_short_template(tmp_path))
    options = ScoreOptions(
        judge_name="tiny", template=template, expected_score=True, generation=SHORT
    )
    part = score_campaign(engine, "amb", critic, replace(options, limit=5))
    assert (part.units, part.stored, part.already_judged) == (12, 5, 0)
    summary = score_campaign(engine, "amb", critic, options)  # continues where it stopped
    assert (summary.units, summary.stored, summary.already_judged) == (12, 7, 5)
    assert summary.prompt_id == "short-amb-text@3"
    rows = _judgements(engine, "tiny")
    assert len(rows) == 12 and {row.unit_key for row in rows} == {
        f"r:item-{i}/model-{m}" for i in range(6) for m in "xy"
    }
    for row in rows:
        parsed = parse_judgement(row.raw_output, ALIGNMMBENCH)
        assert row.parse_status == parsed.status and row.parse_status in PARSE_STATUSES
        assert row.score == parsed.value and row.prompt_id == "short-amb-text@3"
        assert row.input_sha256 and 1 <= row.expected_score <= 10
    assert sum(summary.statuses.values()) + sum(part.statuses.values()) == 12
    again = score_campaign(engine, "amb", critic, options)
    assert (again.stored, again.already_judged) == (0, 12)
    other = score_campaign(engine, "amb", critic, ScoreOptions(judge_name="tiny", generation=SHORT))
    assert other.stored == 12 and other.prompt_id == "alignmmbench-en-text@1"  # another template


def test_batched_generation_matches_one_at_a_time(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    critic = load_critic(tiny_llama)
    prompts = _prompts(engine, load_template(write_short_template(tmp_path)))[:5]
    batched = generate(critic, prompts, GenerationOptions(max_new_tokens=8, batch_size=5))
    single = generate(critic, prompts, GenerationOptions(max_new_tokens=8, batch_size=1))
    assert batched == single and all(len(answers) == 1 for answers in batched)
    sampled = generate(
        critic, prompts[:2], GenerationOptions(max_new_tokens=4, do_sample=True, num_samples=3)
    )
    assert [len(answers) for answers in sampled] == [3, 3]


def test_generation_records_tokens_and_batch_time(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    critic = load_critic(tiny_llama)
    prompts = _prompts(engine, load_template(write_short_template(tmp_path)))[:5]
    measured = generate_measured(critic, prompts, GenerationOptions(max_new_tokens=8, batch_size=5))
    assert [m.texts for m in measured] == generate(
        critic, prompts, GenerationOptions(max_new_tokens=8, batch_size=1)
    )
    for prompt, made in zip(prompts, measured, strict=True):
        ids = encode_prompt(critic, prompt).input_ids
        alone = critic.model.generate(  # one prompt, no padding: its new tokens are the answer
            torch.tensor([ids]),
            max_new_tokens=8,
            do_sample=False,
            pad_token_id=critic.tokenizer.pad_token_id,
        )
        assert made.prompt_tokens == len(ids)
        assert made.completion_tokens == alone.shape[1] - len(ids)
    assert len({m.latency for m in measured}) == 1 and measured[0].latency > 0  # one batch


def test_expected_score_equals_separate_teacher_forced_passes(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    critic = load_critic(tiny_llama)
    prompts = _prompts(engine, load_template(write_short_template(tmp_path)))[:3]
    points = ALIGNMMBENCH.scale_points()
    fast = expected_scores(
        critic, prompts, answer_prefix='{"Rating": ', scale_points=points, batch_size=3
    )
    tokenizer = critic.tokenizer
    digit = {d: tokenizer.convert_tokens_to_ids(d) for d in "0123456789"}
    for prompt, value in zip(prompts, fast, strict=True):
        ids = encode_prompt(critic, prompt, '{"Rating": ').input_ids

        def next_probs(extra: list[int], ids: list[int] = ids) -> torch.Tensor:
            with torch.no_grad():
                logits = critic.model(input_ids=torch.tensor([ids + extra])).logits[0, -1]
            return logits.softmax(-1)

        root, after_one = next_probs([]), next_probs([digit["1"]])
        weights = {float(s): float(root[digit[str(s)]]) for s in range(2, 10)}
        weights[1.0] = float(root[digit["1"]]) * (1 - float(after_one[digit["0"]]))
        weights[10.0] = float(root[digit["1"]]) * float(after_one[digit["0"]])
        expected = sum(s * w for s, w in weights.items()) / sum(weights.values())
        assert math.isclose(value, expected, rel_tol=1e-4)
    alone = [
        expected_scores(critic, [p], answer_prefix='{"Rating": ', scale_points=points)[0]
        for p in prompts
    ]
    assert alone == pytest.approx(fast, rel=1e-4)


def test_pairwise_in_both_orders_maps_back_to_canonical(
    engine: Engine, campaigns: dict, tiny_llama: Path
) -> None:
    summary = score_campaign(
        engine,
        "pairs",
        load_critic(tiny_llama),
        ScoreOptions(judge_name="tiny-pairs", both_orders=True, generation=SHORT),
    )
    assert (summary.units, summary.stored) == (6, 12)
    rows = _judgements(engine, "tiny-pairs")
    assert sorted(row.shown_order for row in rows) == ["AB"] * 6 + ["BA"] * 6
    for row in rows:
        shown = parse_judgement(row.raw_output, PAIRWISE).value
        expected = None if shown is None else to_canonical(shown, swapped=row.shown_order == "BA")
        assert row.preference == expected and row.pair_pk is not None and row.response_pk is None
        assert row.protocol == "pairwise"


def test_vision_critic_sees_the_images(
    engine: Engine, campaigns: dict, tiny_llava: Path, tiny_llama: Path
) -> None:
    critic = load_critic(tiny_llava)
    summary = score_campaign(
        engine, "amb", critic, ScoreOptions(judge_name="tiny-vl", generation=SHORT)
    )
    assert summary.prompt_id == "alignmmbench-en-vl@1" and summary.stored == 12
    with pytest.raises(ValueError, match="^vision needs a vision-language critic"):
        score_campaign(
            engine, "amb", load_critic(tiny_llama), ScoreOptions(judge_name="x", vision=True)
        )


def test_critic_score_command(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    args = [
        "--db",
        url,
        "--json",
        "critic",
        "score",
        "--model",
        str(tiny_llama),
        "--campaign",
        "pairs",
        "--judge-name",
        "cli",
        "--max-new-tokens",
        "4",
        "--both-orders",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["stored"] == 12 and summary["prompt_id"] == "pairwise-en-text@1"
    rows = _judgements(engine, "cli")
    assert all(
        row.usage["prompt_tokens"] > 0
        and 0 < row.usage["completion_tokens"] <= 4
        and row.meta["latency"] > 0
        for row in rows
    )
    # the audit's time per 1,000 units: both shown orders of a pair are one unit's calls
    out = tmp_path / "audit.json"
    args = ["--db", url, "calibrate", "--campaign", "pairs", "--price-in", "1", "--price-out", "2"]
    audit = runner.invoke(app, [*args, "--json", str(out)])
    assert audit.exit_code == 0, audit.output
    costs = {c["judge"]: c for c in json.loads(out.read_text())["judge_audit"]["costs"]}
    per_unit: dict[str, list[float]] = {}
    for row in rows:
        per_unit.setdefault(row.unit_key, [0.0, 0.0])
        per_unit[row.unit_key][0] += row.meta["latency"]
        per_unit[row.unit_key][1] += row.usage["prompt_tokens"]
    assert costs["cli"]["n_units_time"] == costs["cli"]["n_units_tokens"] == len(per_unit) == 6
    seconds = [total[0] for total in per_unit.values()]
    assert costs["cli"]["seconds_per_1000"] == pytest.approx(1000 * sum(seconds) / 6)
    tokens = [total[1] for total in per_unit.values()]
    assert costs["cli"]["input_tokens_per_1000"] == pytest.approx(1000 * sum(tokens) / 6)
    missing = runner.invoke(
        app,
        [
            "--db",
            url,
            "critic",
            "score",
            "--model",
            "/nonexistent",
            "--campaign",
            "pairs",
            "--judge-name",
            "x",
        ],
    )
    assert missing.exit_code == 2 and "not a model folder" in missing.output


def test_mmie_follows_the_released_judge_image_limits(engine: Engine, tiny_llava: Path) -> None:
    build_mmie_campaign(engine)
    summary = score_campaign(
        engine, "mmie", load_critic(tiny_llava), ScoreOptions(judge_name="vl", generation=SHORT)
    )
    assert summary.stored == 3 and summary.statuses.get("skipped") == 1
    rows = {row.unit_key: row for row in _judgements(engine, "vl")}
    skipped = rows["r:PBL-2/m"]
    assert skipped.parse_status == "skipped" and skipped.raw_output == "" and skipped.score is None
    assert "more than 4" in skipped.meta["skipped"]
    assert rows["r:PBL-1/m"].meta.keys() == {"truncated", "latency"}
    assert rows["r:PBL-1/m"].meta["truncated"] is True and rows["r:PBL-0/m"].meta.keys() == {
        "latency"
    }


def test_runner_keeps_finished_chunks_when_ask_fails(engine: Engine, campaigns: dict) -> None:
    with session_scope(engine) as session:
        found = get_campaign(session, "amb")
        units, protocol = campaign_units(session, stored_id(found)), campaign_protocol(found)
    template = builtin_template("alignmmbench", "en")
    jobs = plan_jobs(units, protocol, template, vision=False, resolve_image=image_resolver(engine))
    asked: list[int] = []

    def ask(chunk):  # type: ignore[no-untyped-def]
        asked.append(len(chunk))
        if len(asked) == 3:
            raise RuntimeError("the judge went away")
        rows = [
            judgement_row(job, judge="j", protocol=protocol, raw_output='{"Rating": 4}')
            for job in chunk
        ]
        return Answered(rows)

    with pytest.raises(RuntimeError, match="went away"):
        run_jobs(engine, jobs, ask, judge="j", protocol=protocol, chunk_size=5)
    assert asked == [5, 5, 2] and len(_judgements(engine, "j")) == 10  # two whole chunks
