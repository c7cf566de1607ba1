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
from critic.classifier_head import load_head
from critic.head import _group_folds, fit_head, record_class, record_distribution
from critic.head_features import HeadSetupError, prompt_features
from critic.judging import plan_jobs
from critic.local import GenerationOptions, encode_prompt, verdict_probabilities
from critic.modeling import inference_dtype, load_base_model, load_critic
from critic.prompts import SHOWN_VERDICTS, builtin_template
from critic.score import ScoreOptions, score_campaign, split_unit_keys
from critic.sft import SftOptions, SftRecord, export_campaign_sft, read_sft
from critic.train_config import TrainConfig
from critic.training import train_critic
from data.readmodels.critic_io import campaign_units, image_resolver
from data.readmodels.judge_facts import campaign_judgement_usage
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.protocols import to_shown
from schemas.tables import Annotation, Judgement, Unit, User


def _rows(engine: Engine, judge: str) -> list[Judgement]:
    with session_scope(engine) as session:
        return list(session.exec(select(Judgement).where(Judgement.judge == judge)))


def _pair_prompts(engine: Engine, both_orders: bool = False):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        found = get_campaign(session, "pairs")
        units, protocol = campaign_units(session, stored_id(found)), campaign_protocol(found)
    template = builtin_template("pairwise")
    jobs = plan_jobs(
        units,
        protocol,
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
            session, stored_id(get_campaign(session, "pairs")), judges=["gen-probs", "gen-debiased"]
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


@pytest.mark.parametrize("with_distributions", [False, True])
def test_a_head_is_the_multinomial_regression_of_its_targets(with_distributions: bool) -> None:
    # Independent computation: scikit-learn's multinomial logistic regression on the same
    # standardised features. A label distribution is the same objective as one row per class
    # weighted by its share; mean cross-entropy + l2·‖W‖²/2 is sklearn's C = 1 / (n · l2).
    rng = np.random.default_rng(3)
    classes = ["A", "B", "tie"]
    x = rng.normal(size=(90, 4))
    distributions = rng.dirichlet(np.ones(3) * 0.7, size=90)
    y = [classes[i] for i in distributions.argmax(1)]
    groups = [f"item-{i // 3}" for i in range(90)]
    l2 = 0.05
    fit = fit_head(
        x, y, groups, classes=classes, l2_grid=(l2,), folds=3,
        distributions=distributions if with_distributions else None,
    )  # fmt: skip
    from sklearn.linear_model import LogisticRegression

    weights = distributions if with_distributions else np.eye(3)[distributions.argmax(1)]
    scaled = (x - x.mean(0)) / x.std(0, ddof=1)
    oracle = LogisticRegression(C=1 / (len(x) * l2), tol=1e-12, max_iter=10_000)
    oracle.fit(
        np.repeat(scaled, 3, axis=0), np.tile([0, 1, 2], len(x)), sample_weight=weights.ravel()
    )
    assert np.allclose(fit.head.probabilities(x), oracle.predict_proba(scaled), atol=2e-4)


def _pairwise_record(labels: dict[str, str | None], shown: list[str]) -> SftRecord:
    meta = {"protocol": "pairwise", "pair": ["r1", "r2"], "shown": shown, "labels": labels}
    return SftRecord(messages=[], meta={**meta, "unit_key": "p:r1|r2"})


def test_record_distribution_is_each_annotators_verdict_in_the_shown_order() -> None:
    classes = ["A", "B", "tie"]
    labels: dict[str, str | None] = {"ann": "A", "bo": "A", "cy": "tie", "di": None}
    assert record_distribution(_pairwise_record(labels, ["r1", "r2"]), classes).tolist() == (
        pytest.approx([2 / 3, 0, 1 / 3])
    )
    assert record_distribution(_pairwise_record(labels, ["r2", "r1"]), classes).tolist() == (
        pytest.approx([0, 2 / 3, 1 / 3])
    )
    with pytest.raises(HeadSetupError, match="meta.labels"):
        record_distribution(_pairwise_record({"ann": None}, ["r1", "r2"]), classes)
    score = SftRecord(messages=[], meta={"protocol": "alignmmbench", "labels": {"ann": 7}})
    with pytest.raises(HeadSetupError, match="head targets annotators applies to pairwise"):
        record_distribution(score, ["7"])


def test_a_head_fitted_to_the_annotators_through_the_command(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from annotate_app.cli.main import app

    # carol calls the first three items' pairs a tie: their consensus stays model-x's response,
    # their annotators' distribution does not
    with session_scope(engine) as session:
        carol = session.exec(select(User).where(User.name == "carol")).one()
        for annotation in session.exec(
            select(Annotation).where(Annotation.annotator_id == carol.id)
        ):
            unit = session.get(Unit, annotation.unit_id)
            if annotation.preference is not None and unit.item_pk <= 3:
                annotation.preference = "tie"
    runner = CliRunner()
    db = ["--db", engine.url.render_as_string(hide_password=False), "--json"]
    data = tmp_path / "sft.jsonl"
    export = ["export", "sft", "--campaign", "pairs", "-o", str(data), "--eval-fraction", "0.34"]
    assert runner.invoke(app, [*db, *export]).exit_code == 0
    train = ["critic", "train", "--objective", "head", "--data", str(data), "--base-model",
             str(tiny_llama), "--head-folds", "2", "--head-layers", "1"]  # fmt: skip
    heads = {}
    for targets in ("consensus", "annotators"):
        folder = tmp_path / targets
        result = runner.invoke(app, [*db, *train, "-o", str(folder), "--head-targets", targets])
        assert result.exit_code == 0, result.output
        info = json.loads((folder / "final" / "critic.json").read_text())
        assert info["targets"] == targets
        heads[targets] = load_head(folder / "final")
    records = [r for r in read_sft(data) if r.split == "train"]
    shares = []
    for record in records:  # counted here, apart from the library
        swapped = record.meta["shown"] != record.meta["pair"]
        given = [to_shown(value, swapped=swapped) for value in record.meta["labels"].values()]
        shares.append([given.count(label) / len(given) for label in ("A", "B", "tie")])
    assert any(0 < max(row) < 1 for row in shares), "the file has no split vote to learn from"
    features = prompt_features(
        load_base_model(tiny_llama, dtype=inference_dtype()),
        [record.messages[:-1] for record in records],
        layers=(1,),
        answer_spans=[tuple(map(tuple, r.meta["answer_spans"])) for r in records],
    )[1]
    targets = [record_class(record) for record in records]
    groups = [str(record.meta["item_id"]) for record in records]
    for name, distributions in (("consensus", None), ("annotators", np.array(shares))):
        expected = fit_head(
            features, targets, groups, classes=["A", "B", "tie"], folds=2, seed=0,
            kind="pair-difference", distributions=distributions,
        ).head  # fmt: skip
        assert np.allclose(heads[name].probabilities(features), expected.probabilities(features))
    assert not np.allclose(
        heads["annotators"].probabilities(features), heads["consensus"].probabilities(features)
    )
    scores = tmp_path / "amb.jsonl"
    export_scores = [*export[:3], "amb", "-o", str(scores), *export[6:]]
    assert runner.invoke(app, [*db, *export_scores]).exit_code == 0
    score_train = [*train[:5], str(scores), *train[6:]]
    result = runner.invoke(
        app, [*db, *score_train, "-o", str(tmp_path / "s"), "--head-targets", "annotators"]
    )
    assert result.exit_code == 2
    assert "--head-targets annotators applies to pairwise files" in result.output
