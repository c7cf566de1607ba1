"""``critic train --objective head`` and the pairwise probability read-outs of ``critic score``:
a classifier head on the frozen tiny model (trains, lowers its loss, reloads, judges without
generating), verdict probabilities checked against a separate unbatched forward pass, and the
position-debiased judge checked against the mean of the two stored orders."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from sqlalchemy.engine import Engine
from sqlmodel import select

from calibration.cost import judge_costs
from critic.head import _group_folds, fit_head, load_head
from critic.head_features import prompt_features
from critic.judging import plan_jobs
from critic.local import GenerationOptions, encode_prompt, verdict_probabilities
from critic.modeling import load_base_model, load_critic
from critic.prompts import SHOWN_VERDICTS, builtin_template
from critic.score import ScoreOptions, score_campaign, split_unit_keys
from critic.sft import SftOptions, export_campaign_sft
from critic.training import TrainConfig, train_critic
from data.io.critic_io import campaign_info, campaign_units, image_resolver
from data.io.judge_facts import campaign_judgement_usage
from data.storage.engine import session_scope
from schemas.tables import Judgement


def _rows(engine: Engine, judge: str) -> list[Judgement]:
    with session_scope(engine) as session:
        return list(session.exec(select(Judgement).where(Judgement.judge == judge)))


def _pair_prompts(engine: Engine, both_orders: bool = False):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        info = campaign_info(session, "pairs")
        units = campaign_units(session, info.id)
    template = builtin_template("pairwise")
    jobs = plan_jobs(
        units,
        info.protocol,
        template,
        vision=False,
        resolve_image=image_resolver(engine),
        both_orders=both_orders,
    )
    return [job.prompt for job in jobs]


def test_verdict_probabilities_equal_a_separate_forward_pass(
    engine: Engine, campaigns: dict, tiny_llama: Path
) -> None:
    critic = load_critic(tiny_llama)
    prompts = _pair_prompts(engine)[:3]
    batched = verdict_probabilities(
        critic, prompts, answer_prefix="[[", verdicts=SHOWN_VERDICTS, batch_size=3
    )
    for prompt, probs in zip(prompts, batched, strict=True):
        ids = encode_prompt(critic, prompt, "[[").input_ids
        tokens = {
            label: encode_prompt(critic, prompt, "[[" + text).input_ids[-1]
            for label, text in (("A", "A"), ("B", "B"), ("tie", "C"))
        }
        with torch.no_grad():
            last = critic.model(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)
        raw = {label: float(last[token]) for label, token in tokens.items()}
        total = sum(raw.values())
        assert probs["_mass"] == pytest.approx(total, rel=1e-4)
        for label in raw:
            assert probs[label] == pytest.approx(raw[label] / total, rel=1e-4)


def test_preference_probs_and_debiased_judge(
    engine: Engine, campaigns: dict, tiny_llama: Path
) -> None:
    options = ScoreOptions(
        judge_name="gen",
        both_orders=True,
        preference_probs=True,
        generation=GenerationOptions(max_new_tokens=4, batch_size=4),
    )
    summary = score_campaign(engine, "pairs", load_critic(tiny_llama), options)
    assert summary.stored == 12
    assert summary.derived == {"gen-probs": 12, "gen-debiased": 6}
    probs_rows = _rows(engine, "gen-probs")
    for row in probs_rows:
        probs = row.meta["probs"]
        assert sum(probs[label] for label in ("A", "B", "tie")) == pytest.approx(1.0)
        assert row.preference == max(("A", "B", "tie"), key=probs.__getitem__)
    by_unit: dict[str, dict[str, dict]] = {}
    for row in _rows(engine, "gen"):
        by_unit.setdefault(row.unit_key, {})[row.shown_order] = row.meta["probs"]
    debiased = _rows(engine, "gen-debiased")
    assert len(debiased) == 6
    for row in debiased:
        both = by_unit[row.unit_key]
        for label in ("A", "B", "tie"):
            mean = (both["AB"][label] + both["BA"][label]) / 2
            assert row.meta["probs"][label] == pytest.approx(mean)
        assert row.shown_order == "AB" and row.parse_status == "ok"
    again = score_campaign(engine, "pairs", load_critic(tiny_llama), options)
    assert again.stored == 0 and again.derived == {}
    # The read-outs store no usage; the cost audit charges them gen's calls (both orders: two
    # per pair), also when only they are asked for.
    with session_scope(engine) as session:
        usage = campaign_judgement_usage(
            session, campaign_info(session, "pairs").id, judges=["gen-probs", "gen-debiased"]
        )
    gen, probs, debiased = judge_costs(usage, judges=["gen", "gen-probs", "gen-debiased"])
    assert gen.n_units == 6 and gen.n_calls == gen.n_units_tokens * 2 == gen.n_units_time * 2
    for read_out in (probs, debiased):
        assert read_out.source == "gen" and read_out.n_calls == 12
        assert read_out.seconds_per_1000 == pytest.approx(gen.seconds_per_1000)
        assert read_out.input_tokens_per_1000 == pytest.approx(gen.input_tokens_per_1000)


def test_head_training_lowers_the_loss_changes_weights_and_judges(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = tmp_path / "sft.jsonl"
    export_campaign_sft(engine, "pairs", data, SftOptions(eval_fraction=0.34, seed=1))
    result = train_critic(
        TrainConfig(
            data=data, base_model=tiny_llama, output_dir=tmp_path / "head", objective="head",
            head_folds=2, head_layers=(1, 0),
        )
    )  # fmt: skip
    assert result.losses[-1][1] < result.losses[0][1]
    head = load_head(result.final_dir)
    assert head.weight.abs().sum() > 0  # the fit starts from zero weights
    info = json.loads((result.final_dir / "critic.json").read_text())
    assert info["objective"] == "head" and info["classes"] == ["A", "B", "tie"]
    assert info["head_kind"] == head.kind == "pair-difference"
    assert {(row["layer"], row["l2"]) for row in info["cv"]} == {
        (layer, l2) for layer in (1, 0) for l2 in (1e-3, 1e-2, 1e-1, 1.0, 10.0)
    }
    best = min(info["cv"], key=lambda row: (row["log_loss"], -row["l2"]))
    assert (head.layer, head.l2) == (best["layer"], best["l2"]) == (info["layer"], info["l2"])
    critic = load_critic(result.final_dir)
    assert critic.head is not None
    keys = split_unit_keys(data, "eval")
    options = ScoreOptions(judge_name="head", both_orders=True, unit_keys=keys)
    summary = score_campaign(engine, "pairs", critic, options)
    assert summary.stored == 2 * len(keys) and summary.derived == {"head-debiased": len(keys)}
    for row in _rows(engine, "head"):
        assert row.unit_key in keys and row.parse_status == "ok"
        probs = row.meta["probs"]
        assert row.preference == max(("A", "B", "tie"), key=probs.__getitem__)
    # the stored probabilities are the head applied to the frozen model's features
    base = load_base_model(tiny_llama)
    stored = _rows(engine, "head")[0]
    prompt = next(
        p for p in _pair_prompts(engine, both_orders=True) if p.input_sha256 == stored.input_sha256
    )
    features = prompt_features(
        base, [prompt.messages], layers=(head.layer,), answer_spans=[prompt.answer_spans]
    )[head.layer]
    probs = dict(zip(head.classes, head.probabilities(features)[0], strict=True))
    swapped = stored.shown_order == "BA"
    expected = {"A": probs["B" if swapped else "A"], "B": probs["A" if swapped else "B"]}
    for label, value in expected.items():
        assert stored.meta["probs"][label] == pytest.approx(float(value), abs=1e-5)


def test_head_cross_validation_is_grouped_by_item_and_picks_the_best_l2() -> None:
    groups = [f"item-{i // 3}" for i in range(60)]
    folds = _group_folds(groups, 5, seed=0)
    for group in set(groups):
        assert len({folds[i] for i, g in enumerate(groups) if g == group}) == 1
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4))
    y = ["A" if v > 0 else "B" for v in x[:, 0] + 0.1 * rng.normal(size=60)]
    fit = fit_head(x, y, groups, classes=["A", "B", "tie"], folds=5)
    best = min(fit.cv, key=lambda row: row["log_loss"])
    assert fit.head.l2 == best["l2"] and best["accuracy"] > 0.8
    predicted = np.array(["A", "B", "tie"])[fit.head.probabilities(x).argmax(1)]
    assert (predicted == np.array(y)).mean() > 0.9
    assert math.isclose(fit.out_of_fold.sum(1).mean(), 1.0, rel_tol=1e-6)


def test_pair_difference_head_learns_from_the_responses_and_ignores_their_order() -> None:
    # Response features [a | b]: A is better when a's first coordinate is higher, a tie when the
    # two are within 0.3; the other coordinates are noise. A head fitted on the pairs in one
    # shown order must read the difference and give mirrored probabilities for the mirror.
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    gap = a[:, 0] - b[:, 0]
    y = np.where(np.abs(gap) < 0.3, "tie", np.where(gap > 0, "A", "B")).tolist()
    groups = [f"item-{i // 2}" for i in range(300)]
    x = np.concatenate([a, b], axis=1)
    fit = fit_head(x, y, groups, classes=["A", "B", "tie"], folds=5, kind="pair-difference")
    assert fit.head.kind == "pair-difference"
    predicted = np.array(["A", "B", "tie"])[fit.head.probabilities(x).argmax(1)]
    assert (predicted == np.array(y)).mean() > 0.85
    mirrored = fit.head.probabilities(np.concatenate([b, a], axis=1))
    assert np.allclose(mirrored, fit.head.probabilities(x)[:, [1, 0, 2]], atol=1e-6)
    # a prompt-feature head on the same inputs has no such guarantee
    prompt_head = fit_head(x, y, groups, classes=["A", "B", "tie"], folds=5).head
    assert not np.allclose(
        prompt_head.probabilities(np.concatenate([b, a], axis=1)),
        prompt_head.probabilities(x)[:, [1, 0, 2]],
        atol=1e-3,
    )


def test_head_and_probability_options_through_the_commands(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from annotate_app.cli.main import app

    runner = CliRunner()
    db = ["--db", engine.url.render_as_string(hide_password=False), "--json"]
    data = tmp_path / "sft.jsonl"
    steps = [
        ["export", "sft", "--campaign", "pairs", "-o", str(data), "--eval-fraction", "0.34"],
        ["critic", "train", "--objective", "head", "--data", str(data), "--base-model",
         str(tiny_llama), "-o", str(tmp_path / "head"), "--head-folds", "2", "--head-layers",
         "1,2"],
        ["critic", "score", "--model", str(tmp_path / "head" / "final"), "--campaign", "pairs",
         "--judge-name", "h", "--both-orders", "--split-of", str(data), "--split", "eval",
         "--dtype", "float32"],
        ["critic", "score", "--model", str(tiny_llama), "--campaign", "pairs", "--judge-name",
         "z", "--preference-probs", "--split-of", str(data), "--split", "train",
         "--max-new-tokens", "2"],
    ]  # fmt: skip
    outputs = []
    for step in steps:
        result = runner.invoke(app, [*db, *step])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.stdout))
    eval_keys, train_keys = split_unit_keys(data, "eval"), split_unit_keys(data, "train")
    assert outputs[2]["stored"] == 2 * len(eval_keys)
    assert outputs[2]["derived"] == {"h-debiased": len(eval_keys)}
    assert outputs[3]["stored"] == len(train_keys)
    assert outputs[3]["derived"] == {"z-probs": len(train_keys)}
    assert {row.unit_key for row in _rows(engine, "z-probs")} == train_keys
    bad = runner.invoke(app, [*db, *steps[3][:-2], "--split", "test"])
    assert bad.exit_code == 2 and "--split" in bad.output
