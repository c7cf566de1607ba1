"""The bundled sample project: coverage, flags, consistency of the synthetic labels, idempotency,
determinism. One build per module (a few seconds) serves the read-only tests."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from statistics import mean

import pytest
from PIL import Image
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from critic.parsing import parse_judgement
from data import queue
from data.sample import (
    ALIGNMMBENCH_DATASET,
    CAMPAIGNS,
    DEMO_ACCOUNTS,
    MMIE_DATASET,
    SampleSummary,
)
from data.sample.gold import GOLD_PLANS, GoldPlan
from data.services.users import password_matches
from data.storage.content import iter_images, resolve_image
from data.storage.engine import make_engine, session_scope
from schemas.benchmarks import ALIGNMMBENCH_TASKS, MMIE_CATEGORIES
from schemas.protocols import get_protocol, to_canonical
from schemas.tables import (
    Annotation,
    Assignment,
    Campaign,
    Dataset,
    GoldAnswer,
    Item,
    Judgement,
    Pair,
    Response,
    Unit,
    User,
)
from tests.sample_template import SampleTemplate

FINISHED = [plan.spec.name for plan in CAMPAIGNS if plan.finished and plan.labelled_share == 1]
PARTIAL = [plan.spec.name for plan in CAMPAIGNS if plan.finished and plan.labelled_share < 1]
OPEN = [plan.spec.name for plan in CAMPAIGNS if not plan.finished]
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, sample_template: SampleTemplate
) -> Iterator[tuple[Engine, SampleSummary, Path]]:
    """The sample project as built for this test run (:mod:`tests.sample_template`)."""
    folder = tmp_path_factory.mktemp("sample")
    sample_template.copy_to(folder / "sample.db", folder / "files")
    engine = make_engine(f"sqlite:///{folder / 'sample.db'}")
    yield engine, sample_template.summary, folder / "files"
    engine.dispose()


@pytest.fixture
def session(built: tuple[Engine, SampleSummary, Path]) -> Iterator[Session]:
    with Session(built[0]) as session:
        yield session


def _items(session: Session, dataset: str) -> list[Item]:
    query = select(Item).join(Dataset).where(Dataset.name == dataset).order_by(Item.item_id)
    return list(session.exec(query))


def _campaign(session: Session, name: str) -> Campaign:
    return session.exec(select(Campaign).where(Campaign.name == name)).one()


def test_alignmmbench_items_cover_every_task_with_prompt_variants(session: Session) -> None:
    items = _items(session, ALIGNMMBENCH_DATASET)
    assert len(items) >= 60
    assert {item.task for item in items} == set(ALIGNMMBENCH_TASKS)
    assert all(item.category == ALIGNMMBENCH_TASKS[item.task] for item in items)
    variants = Counter(item.group for item in items)
    assert min(variants.values()) >= 2, "every seed needs several variants for the alignment score"
    for item in items:
        assert re.fullmatch(r"amb-\d{8}-\d", item.item_id)
        assert item.item_id.split("-")[1] == item.group
    dialogue = [item for item in items if item.category == "Dialogue Context"]
    assert dialogue and all(len(item.history) >= 2 for item in dialogue)
    assert all(item.history == [] for item in items if item.category != "Dialogue Context")
    chinese = [item for item in items if CJK.search(str(item.question))]
    assert 10 <= len(chinese) < len(items)


def test_mmie_items_cover_the_three_categories_with_interleaved_answers(session: Session) -> None:
    items = _items(session, MMIE_DATASET)
    assert len(items) >= 12
    assert {item.category for item in items} == set(MMIE_CATEGORIES)
    assert all(item.item_id.startswith(f"{item.category}-") for item in items)
    assert all(item.reference for item in items if item.category == "MSR")
    responses = session.exec(
        select(Response).where(col(Response.item_pk).in_([item.id for item in items]))
    ).all()
    interleaved = [
        r for r in responses
        if isinstance(r.content, list) and {s["type"] for s in r.content} == {"text", "image"}
    ]  # fmt: skip
    assert len(interleaved) >= len(items)
    assert max(len(iter_images(r.content)) for r in responses) <= 3  # what the MMIE judge keeps


def test_every_item_has_responses_from_at_least_three_fictional_models(session: Session) -> None:
    per_item = defaultdict(set)
    for item_pk, model in session.exec(select(Response.item_pk, Response.model)):
        per_item[item_pk].add(model)
    assert len(per_item) == session.exec(select(func.count()).select_from(Item)).one()
    assert min(len(models) for models in per_item.values()) >= 3
    assert all(m.startswith("synthetic-") for models in per_item.values() for m in models)


def test_pairs_compare_two_responses_of_the_same_item(session: Session) -> None:
    pairs = session.exec(select(Pair)).all()
    assert len(pairs) >= 60
    for pair in pairs:
        a = session.get(Response, pair.response_a_pk)
        b = session.get(Response, pair.response_b_pk)
        assert a.item_pk == b.item_pk == pair.item_pk
        assert a.model != b.model


def test_accounts_have_roles_synthetic_flags_and_the_printed_passwords(
    session: Session, built: tuple[Engine, SampleSummary, Path]
) -> None:
    users = {user.name: user for user in session.exec(select(User))}
    roles = Counter(users[account.name].role for account in DEMO_ACCOUNTS)
    assert roles["annotator"] == 5 and roles["admin"] == 1 and roles["reviewer"] == 1
    for account in DEMO_ACCOUNTS:
        user = users[account.name]
        assert user.synthetic and "demo" in user.name and user.role == account.role
        assert password_matches(user.password_hash, account.password)
        assert account.password in built[1].login_details()


def test_every_image_is_stored_and_decodable(
    session: Session, built: tuple[Engine, SampleSummary, Path]
) -> None:
    paths = set()
    for item in session.exec(select(Item)):
        paths.update(iter_images(item.question))
        for turn in item.history:
            paths.update(iter_images(turn["content"]))
    for content in session.exec(select(Response.content)):
        paths.update(iter_images(content))
    assert len(paths) >= 40
    for path in paths:
        with Image.open(resolve_image(path, built[2])) as image:
            image.load()
            assert image.size[0] > 100 and image.size[1] > 100


def test_everything_synthetic_is_marked(session: Session) -> None:
    datasets = session.exec(select(Dataset)).all()
    assert {d.name for d in datasets} == {ALIGNMMBENCH_DATASET, MMIE_DATASET}
    assert all(d.synthetic and "synthetic" in d.name for d in datasets)
    campaigns = session.exec(select(Campaign)).all()
    assert {c.name for c in campaigns} == set(FINISHED + PARTIAL + OPEN)
    assert all(c.synthetic and "demo" in c.name for c in campaigns)
    assert all(a.synthetic for a in session.exec(select(Annotation)))
    assert all(j.synthetic and "synthetic" in j.judge for j in session.exec(select(Judgement)))
    assert all(r.meta.get("synthetic") is True for r in session.exec(select(Response)))


@pytest.mark.parametrize("name", FINISHED)
def test_finished_campaigns_have_four_consistent_annotations_per_unit(
    session: Session, name: str
) -> None:
    campaign = _campaign(session, name)
    protocol = get_protocol(campaign.protocol)
    assert campaign.status == "closed" and campaign.overlap == 4
    units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id)).all()
    annotations = defaultdict(list)
    for annotation in session.exec(select(Annotation).where(Annotation.campaign_id == campaign.id)):
        annotations[annotation.unit_id].append(annotation)
    assignments = {a.id: a for a in session.exec(
        select(Assignment).where(Assignment.campaign_id == campaign.id))}  # fmt: skip
    for unit in units:
        live = annotations[unit.id]
        # alice, bob, carol, and dave or erin in turn (the careless and position-biased ones)
        assert len(live) == 4 == unit.slots_taken == unit.n_submitted
        assert len({a.annotator_id for a in live}) == 4
        for annotation in live:
            assert annotation.is_live and annotation.revision == 1
            assert len(annotation.rationale) >= campaign.rationale_min
            assignment = assignments[annotation.assignment_id]
            assert assignment.status == "submitted" and assignment.unit_id == unit.id
            assert assignment.annotator_id == annotation.annotator_id
            assert assignment.closed_at is not None and annotation.seconds > 0
            if protocol.is_pointwise:
                assert protocol.validate_score(annotation.score) == annotation.score
                assert annotation.preference is None
            else:
                assert annotation.preference in protocol.labels and annotation.score is None
                assert annotation.shown_order == assignment.shown_order
        assert sorted(assignments[a.assignment_id].slot for a in live) == [0, 1, 2, 3]
    assert len(assignments) == 4 * len(units)


@pytest.mark.parametrize("name", FINISHED)
def test_finished_campaigns_are_judged_by_two_judges_with_some_unparsed_outputs(
    session: Session, name: str
) -> None:
    campaign = _campaign(session, name)
    protocol = get_protocol(campaign.protocol)
    units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id)).all()
    column = Judgement.pair_pk if campaign.protocol == "pairwise" else Judgement.response_pk
    targets = {u.pair_pk if campaign.protocol == "pairwise" else u.response_pk for u in units}
    judgements = session.exec(select(Judgement).where(col(column).in_(targets))).all()
    orders = ("AB", "BA") if campaign.protocol == "pairwise" else ("AB",)
    per_judge = Counter(j.judge for j in judgements)
    assert len(per_judge) >= 2
    assert set(per_judge.values()) == {len(units) * len(orders)}
    assert {j.shown_order for j in judgements} == set(orders)
    unparsed = [j for j in judgements if j.parse_status != "ok"]
    assert 0 < len(unparsed) < len(judgements) * 0.15
    assert all(j.score is None and j.preference is None for j in unparsed)
    for judgement in judgements:  # the raw output says what the stored row says
        parsed = parse_judgement(judgement.raw_output, protocol)
        assert parsed.status == judgement.parse_status, judgement.raw_output
        if campaign.protocol == "pairwise" and parsed.value is not None:
            swapped = judgement.shown_order == "BA"
            assert to_canonical(parsed.value, swapped=swapped) == judgement.preference
        elif campaign.protocol != "pairwise":
            assert parsed.value == judgement.score


def _human_means(session: Session, campaign: Campaign) -> dict[int, float]:
    scores = defaultdict(list)
    query = (
        select(Unit.response_pk, Annotation.score)
        .join(Unit, Unit.id == Annotation.unit_id)
        .where(Annotation.campaign_id == campaign.id)
    )
    for response_pk, score in session.exec(query):
        scores[response_pk].append(score)
    return {pk: mean(values) for pk, values in scores.items()}


@pytest.mark.parametrize("name", ["demo-alignmmbench-finished", "demo-mmie-finished"])
def test_scores_separate_the_models_and_the_judges(session: Session, name: str) -> None:
    campaign = _campaign(session, name)
    humans = _human_means(session, campaign)
    by_model = defaultdict(list)
    for response in session.exec(select(Response).where(col(Response.id).in_(humans))):
        by_model[response.model].append(humans[response.id])
    model_means = sorted(mean(values) for values in by_model.values())
    protocol = get_protocol(campaign.protocol)
    assert model_means[-1] - model_means[0] > 0.15 * protocol.scale_range
    errors = {}
    for judge in ("synthetic-gpt4-like", "synthetic-critic-v0"):
        rows = session.exec(
            select(Judgement.response_pk, Judgement.score).where(
                Judgement.judge == judge, col(Judgement.response_pk).in_(humans),
                Judgement.parse_status == "ok",
            )
        ).all()  # fmt: skip
        errors[judge] = mean(abs(score - humans[pk]) for pk, score in rows)
    assert errors["synthetic-gpt4-like"] < errors["synthetic-critic-v0"]


def test_the_noisier_pairwise_judge_prefers_the_response_shown_first(session: Session) -> None:
    share = {}
    for judge in ("synthetic-gpt4-like", "synthetic-critic-v0"):
        verdicts = session.exec(
            select(Judgement.shown_order, Judgement.preference).where(
                Judgement.judge == judge, Judgement.protocol == "pairwise",
                Judgement.parse_status == "ok",
            )
        ).all()  # fmt: skip
        first = [p == ("A" if order == "AB" else "B") for order, p in verdicts]
        share[judge] = mean(first)
    assert share["synthetic-critic-v0"] > share["synthetic-gpt4-like"] + 0.1


@pytest.fixture
def own_sample(tmp_path: Path, sample_template: SampleTemplate) -> Iterator[Engine]:
    """A copy of the sample project of this test's own, to annotate in."""
    sample_template.copy_to(tmp_path / "sample.db", tmp_path / "files")
    engine = make_engine(f"sqlite:///{tmp_path / 'sample.db'}")
    yield engine
    engine.dispose()


@pytest.mark.parametrize("plan", GOLD_PLANS, ids=lambda plan: plan.campaign)
def test_open_campaigns_have_gold_units_with_explanations(session: Session, plan: GoldPlan) -> None:
    campaign = _campaign(session, plan.campaign)
    protocol = get_protocol(campaign.protocol)
    gold = session.exec(select(GoldAnswer).where(GoldAnswer.campaign_id == campaign.id)).all()
    assert len(gold) == plan.units >= 4
    units = {u.id: u for u in session.exec(select(Unit).where(Unit.campaign_id == campaign.id))}
    assert {g.unit_id for g in gold} == {u.id for u in units.values() if u.gold}
    for answer in gold:
        assert len(answer.explanation) > 30
        if protocol.is_pointwise:
            assert protocol.validate_score(answer.score) == answer.score
        else:
            assert answer.preference in ("A", "B")
    assert campaign.gold_rate == plan.gold_rate and campaign.gold_feedback == plan.gold_feedback
    assert campaign.qualification_gold == plan.qualification_gold
    assert len(units) - len(gold) >= 20, "the gold units leave most of the campaign to annotate"


def _gold_answer(session: Session, unit_id: int) -> GoldAnswer:
    return session.exec(select(GoldAnswer).where(GoldAnswer.unit_id == unit_id)).one()


def _user_id(session: Session, name: str) -> int:
    user = session.exec(select(User).where(User.name == name)).one()
    assert user.id is not None
    return user.id


def test_an_annotator_meets_the_qualification_step_first_and_gold_is_blind(
    own_sample: Engine,
) -> None:
    """demo-alice logs in to demo-alignmmbench-open: three gold units (served like any other),
    feedback after each, then real units once 2 of 3 are within a point."""
    with session_scope(own_sample) as session:
        campaign = _campaign(session, "demo-alignmmbench-open")
        assert (
            campaign.qualification_gold == 3
            and campaign.qualification_accuracy == pytest.approx(2 / 3)
        )
        alice = _user_id(session, "demo-alice")
        view = queue.next_unit(session, campaign.id, alice)
        gold_views = []
        for turn in range(3):
            assert view is not None and session.get(Unit, view.unit_id).gold, turn
            gold_views.append(view)
            expected = _gold_answer(session, view.unit_id)
            near = expected.score - 1 if expected.score > 1 else expected.score + 1
            # one wrong, one exact, one a step away (counted right, but not "the same")
            given = [expected.score - 4, expected.score, near][turn]
            step = queue.submit_and_next(
                session, view.assignment_id, alice, score=given,
                rationale="Checked the answer against the picture and the question.", seconds=40,
            )  # fmt: skip
            assert step.feedback is not None and step.feedback.explanation == expected.explanation
            assert (step.feedback.agrees, step.feedback.exact) == (turn > 0, turn == 1)
            view = step.next_unit
        assert view is not None and not session.get(Unit, view.unit_id).gold
        real = view
    for gold_view in gold_views:  # the same record, field for field, as a real unit's
        for field in dataclasses.fields(real):
            mine, theirs = getattr(gold_view, field.name), getattr(real, field.name)
            assert type(mine) is type(theirs), field.name
        assert gold_view.campaign_id == real.campaign_id and gold_view.draft is None
    with Session(own_sample) as session:
        for gold_view in gold_views:
            explanation = _gold_answer(session, gold_view.unit_id).explanation
            assert explanation not in repr(gold_view)
        again = queue.next_unit(session, campaign.id, alice)  # qualified: her real unit still
        assert again is not None and again.unit_id == real.unit_id


def test_a_careless_annotator_is_held_by_the_qualification_step(own_sample: Engine) -> None:
    with session_scope(own_sample) as session:
        campaign = _campaign(session, "demo-alignmmbench-open")
        dave = _user_id(session, "demo-dave")
        view = queue.next_unit(session, campaign.id, dave)
        for _ in range(3):
            assert view is not None and session.get(Unit, view.unit_id).gold
            expected = _gold_answer(session, view.unit_id).score
            wrong = 1.0 if expected >= 6 else 10.0
            step = queue.submit_and_next(
                session, view.assignment_id, dave, score=wrong,
                rationale="Looks good to me, fine.", seconds=2,
            )  # fmt: skip
            view = step.next_unit
        assert view is None
    with session_scope(own_sample) as session, pytest.raises(queue.AnnotatorHeld):
        queue.next_unit(session, campaign.id, dave)


@pytest.mark.parametrize("name", OPEN)
def test_open_campaigns_are_active_and_untouched(session: Session, name: str) -> None:
    campaign = _campaign(session, name)
    assert campaign.status == "active"
    units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id)).all()
    assert len(units) >= 20
    assert all(u.slots_taken == 0 and u.n_submitted == 0 for u in units)
    count = (
        select(func.count()).select_from(Annotation).where(Annotation.campaign_id == campaign.id)
    )
    assert session.exec(count).one() == 0


def test_summary_counts_match_the_database(
    session: Session, built: tuple[Engine, SampleSummary, Path]
) -> None:
    summary = built[1]
    assert summary.created
    assert summary.items == session.exec(select(func.count()).select_from(Item)).one()
    assert summary.responses == session.exec(select(func.count()).select_from(Response)).one()
    assert summary.pairs == session.exec(select(func.count()).select_from(Pair)).one()
    assert summary.annotations == summary.added_annotations
    assert summary.annotations == session.exec(select(func.count()).select_from(Annotation)).one()
    assert summary.judgements == summary.added_judgements
    assert summary.judgements == session.exec(select(func.count()).select_from(Judgement)).one()
    unparsed = select(func.count()).select_from(Judgement).where(Judgement.parse_status != "ok")
    assert summary.unparsed_judgements == session.exec(unparsed).one() > 0


HONEST = ("demo-alice", "demo-bob", "demo-carol", "demo-erin")
"""Honest about effort: erin's position bias is a bias, not carelessness."""


@pytest.mark.parametrize("name", FINISHED)
def test_low_effort_flags_spare_the_honest_annotators_and_catch_the_careless_one(
    session: Session, name: str
) -> None:
    from data.services.monitor import low_effort_report

    report = low_effort_report(session, _campaign(session, name).id)
    rows = {row.annotator: row for row in report.annotators}
    dave = rows["demo-dave"]
    assert dave.counts["too_fast"] == dave.answers >= 30
    assert {flag.kind for flag in dave.flags} == {"too_fast", "stock_rationales"}
    for annotator in HONEST:
        row = rows[annotator]
        assert row.answers >= 30 and row.counts["too_fast"] == 0 and not row.flags
        # their ties and hedged preferences no longer repeat one template per question
        assert row.flagged <= 0.05 * row.answers, (annotator, row.flagged, row.answers)


@pytest.mark.parametrize("name", FINISHED)
def test_the_annotators_table_flags_the_careless_and_the_position_biased_ones(
    built: tuple[Engine, SampleSummary, Path], name: str
) -> None:
    from annotate_app.campaign_calibration import calibrate_campaign, load_campaign

    engine = built[0]
    result = calibrate_campaign(engine, load_campaign(engine, name), bootstrap=200).report.result
    assert result.annotators is not None
    flags = {
        row.annotator.removeprefix("annotator:"): {flag.kind for flag in row.flags}
        for row in result.annotators.rows
    }
    assert flags["demo-dave"] & {"low_competence", "low_agreement"}
    for annotator in ("demo-alice", "demo-bob", "demo-carol"):
        careless = {"low_competence", "low_agreement", "position", "length"}
        assert not flags[annotator] & careless, annotator
    if name == "demo-pairwise-finished":
        assert "position" in flags["demo-erin"]
    else:  # on scores there is no first response to prefer
        assert "position" not in flags["demo-erin"]


PRAISE = (
    "Correct and complete", "Matches the reference", "Accurate and detailed",
    "Nothing important is missing", "All steps are there and correct",
    "回答正确且完整", "与参考答案一致", "内容准确、细节充分",
)  # fmt: skip
"""Words that say an answer is right and complete: never beside a score in the lower half."""
BLAME = (
    "details are wrong", "Mostly incorrect", "Several factual errors", "every claim is wrong",
    "On topic but wrong", "The conclusion is incorrect", "Does not answer", "Off topic",
    "Ignores the question", "empty frames", "One unrelated sentence",
    "一半以上的细节有误", "存在多处事实错误", "切题但完全错误", "结论是错误的", "答非所问",
)  # fmt: skip
"""Words that say most of an answer is wrong: never beside a score in the scale's top 30%."""


def _contradictions(rows: list[tuple[float, str]], low: float, high: float) -> list[object]:
    wrong = []
    for score, rationale in rows:
        position = (score - low) / (high - low)
        if position > 0.7 and any(words in rationale for words in BLAME):
            wrong.append((score, rationale))
        if position < 0.5 and any(words in rationale for words in PRAISE):
            wrong.append((score, rationale))
    return wrong


@pytest.mark.parametrize("name", ["demo-alignmmbench-finished", "demo-mmie-finished"])
def test_rationales_of_humans_and_judges_agree_with_their_scores(
    session: Session, name: str
) -> None:
    """A 9 never says that more than half of the details are wrong, a 4 never that the answer
    matches the reference: for every annotator and every synthetic judge, in both languages."""
    from data.sample.rationales import _REMARKS

    campaign = _campaign(session, name)
    low, high = get_protocol(campaign.protocol).bounds
    judged = session.exec(  # the sample's judges judge its finished campaigns only
        select(Judgement.score, Judgement.rationale).where(
            Judgement.protocol == campaign.protocol, col(Judgement.score).is_not(None)
        )
    ).all()
    answered = session.exec(
        select(Annotation.score, Annotation.rationale).where(Annotation.campaign_id == campaign.id)
    ).all()
    assert len(judged) >= 100 and len(answered) >= 100
    assert _contradictions([(s, r) for s, r in judged if s is not None], low, high) == []
    assert _contradictions([(s, r) for s, r in answered if s is not None], low, high) == []
    assert _contradictions([(high, "Mostly incorrect: it says 6.")], low, high)  # the rule bites
    low_remarks = (*_REMARKS["en"]["low"], *_REMARKS["zh"]["low"])
    high_remarks = (*_REMARKS["en"]["high"], *_REMARKS["zh"]["high"])
    for score, rationale in answered:  # a person's closing remark fits the score too
        assert score is not None
        position = (score - low) / (high - low)
        assert not (position > 0.7 and any(text in rationale for text in low_remarks)), rationale
        assert not (position < 0.5 and any(text in rationale for text in high_remarks)), rationale


@pytest.mark.parametrize("name", FINISHED)
def test_no_two_annotators_write_the_same_rationale_on_a_unit(session: Session, name: str) -> None:
    campaign = _campaign(session, name)
    rationales = defaultdict(list)
    for unit_id, rationale in session.exec(
        select(Annotation.unit_id, Annotation.rationale).where(
            Annotation.campaign_id == campaign.id
        )
    ):
        rationales[unit_id].append(rationale)
    assert rationales
    repeated = {unit: texts for unit, texts in rationales.items() if len(set(texts)) < len(texts)}
    assert repeated == {}


def test_the_partial_campaign_shows_judge_only_humans_only_and_ppi_for_every_model(
    built: tuple[Engine, SampleSummary, Path],
) -> None:
    """demo-mmie-partial: humans labelled a random half of the units, both judges all of them,
    so its Model scores have all three values for every judge and model out of the box."""
    from annotate_app.campaign_calibration import calibrate_campaign, load_campaign

    assert PARTIAL == ["demo-mmie-partial"]
    engine = built[0]
    source = load_campaign(engine, PARTIAL[0])
    result = calibrate_campaign(engine, source, bootstrap=0).report.result
    assert result.model_estimates is not None
    estimates = result.model_estimates.estimates
    with Session(engine) as session:
        campaign = _campaign(session, PARTIAL[0])
        units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id)).all()
        labelled = [u for u in units if u.n_submitted == 2]
        assert all(u.n_submitted in (0, 2) for u in units)
        assert 0.3 * len(units) < len(labelled) < 0.7 * len(units)
    models = {str(m) for m in source.frame["model"].dropna()}
    assert {(e.judge, e.model) for e in estimates} == {
        (j, m) for j in source.judges for m in models
    }
    categories = {str(c) for c in source.frame["category"].dropna()}
    assert {e.leaderboard for e in estimates} == {"average"} | {f"category:{c}" for c in categories}
    for estimate in estimates:  # a category of this small sample may have too few labels
        if estimate.leaderboard != "average":
            assert estimate.reason is None or "at least 2 are needed" in estimate.reason
            continue
        assert estimate.reason is None, estimate
        assert estimate.judge_only is not None and estimate.humans_only is not None
        assert estimate.prediction_powered is not None and estimate.effective_labels is not None
        assert estimate.n_labelled >= 2 and estimate.n_unlabelled >= 1
