"""Judge-guided routing: the serving order per mode, stored ranks, overlap under concurrency."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from annotate_app.cli.context import cli_flag
from annotate_app.cli.main import app
from data import queue
from data.queue.priority import (
    CERTAIN_DISAGREEMENT,
    JudgeReading,
    estimation_sample,
    is_random_position,
    plan_routing,
    probability_spread,
    random_key,
    random_order,
    serving_key,
    unit_disagreement,
)
from data.services.judgements import insert_judgements
from data.services.routing import campaign_estimation_sample, set_routing
from data.storage.campaign_lookup import CampaignError, get_campaign
from data.storage.engine import session_scope
from schemas.tables import Annotation, Item, Judgement, Pair, Response, Unit
from tests.data.test_queue import _check_counters, _lease, _submit, build_campaign

# --- the priority function, by hand -------------------------------------------------------------


def _pairwise(*verdicts: str) -> JudgeReading:
    axis = {"A": 1.0, "tie": 0.5, "B": 0.0}
    return JudgeReading(tuple(axis[v] for v in verdicts))


def test_disagreement_orders_by_the_spread_of_the_judges_then_a_seeded_key() -> None:
    readings = {
        10: {"j1": _pairwise("A"), "j2": _pairwise("B")},  # spread 1: capped at 1
        11: {"j1": _pairwise("A"), "j2": _pairwise("tie")},  # 0.5 / 0.4: capped at 1
        12: {"j1": _pairwise("A"), "j2": _pairwise("A")},  # 0
        13: {"j1": _pairwise("B"), "j2": _pairwise("tie"), "other": _pairwise("A")},  # 1
        14: {"j1": _pairwise("A")},  # one judge: no signal
        15: {"j1": _pairwise("A", "tie"), "j2": _pairwise("A", "A")},  # 0.25 / 0.4 = 0.625
    }
    units = [10, 11, 12, 13, 14, 15]
    plan = plan_routing("judge-disagreement", units, readings, judges=["j1", "j2"])
    first = sorted([10, 11, 13], key=lambda unit: random_key(0, unit))  # tie broken by the key
    assert plan.order == (*first, 15, 12, 14)
    assert (plan.guide, plan.units_with_signal) == ("disagreement", 5)
    assert plan.note == "5 of 6 units ordered by judge disagreement (j1, j2)"


def test_disagreement_is_capped_where_one_judge_is_certainly_wrong() -> None:
    """A judge errs at 20% of the scale from the reference (pairwise: another label), so verdicts
    0.4 apart on the 0-1 axis leave one judge wrong for certain: the signal is spread / 0.4,
    capped at 1. Pairwise, a tie against A is as certain a disagreement as B against A."""
    assert round(CERTAIN_DISAGREEMENT, 9) == 0.4
    pairwise = [
        unit_disagreement({"j1": _pairwise(a), "j2": _pairwise(b)})
        for a, b in (("A", "B"), ("A", "tie"), ("tie", "B"), ("tie", "tie"))
    ]
    assert pairwise == [1.0, 1.0, 1.0, 0.0]
    # 1-10 scale: 7 and 8.8 are 0.2 apart (half the cap), 2 and 9 are 0.78 apart (capped)
    points = {s: JudgeReading(((s - 1) / 9,)) for s in (2, 7, 8.8, 9)}
    assert unit_disagreement({"a": points[7], "b": points[8.8]}) == pytest.approx(0.5)
    assert unit_disagreement({"a": points[2], "b": points[9]}) == 1.0
    assert unit_disagreement({"a": points[7]}) is None


def test_uncertainty_from_probabilities_repeated_verdicts_or_nothing() -> None:
    # (1 - 0.5) / (2/3) = 0.75; a flip between the two shown orders: range 1 - 0 = 1.
    assert probability_spread({"A": 0.5, "B": 0.3, "tie": 0.2, "_mass": 0.9}, True, (0, 1)) == (
        pytest.approx(0.75)
    )
    # Scores 1 and 5 with p = 1/2 each on a 1-5 scale: sd 2 over half range 2 = 1.
    assert probability_spread({"1": 0.5, "5": 0.5}, False, (1, 5)) == pytest.approx(1.0)
    readings = {
        1: {"j": JudgeReading((1.0,), stored_spread=0.75)},
        2: {"j": _pairwise("A", "B")},  # both orders disagree: 1.0
        3: {"j": _pairwise("A", "A")},  # 0
        4: {"j": _pairwise("A")},  # nothing usable
    }
    plan = plan_routing("judge-uncertainty", [1, 2, 3, 4], readings, judges=["j"])
    assert plan.order == (2, 1, 3, 4)
    nothing = plan_routing("judge-uncertainty", [4], {4: readings[4]}, judges=["j"])
    assert nothing.order == () and nothing.fell_back
    assert "served least-annotated first instead" in nothing.note


def test_stratified_keeps_a_fixed_share_and_its_random_prefix_is_always_served() -> None:
    units = list(range(100, 140))
    readings = {u: {"a": _pairwise("A"), "b": _pairwise("B" if u % 3 else "A")} for u in units}
    plan = plan_routing("stratified", units, readings, judges=["a", "b"], share=0.25, seed=5)
    assert sorted(plan.order) == units
    assert [t for t in range(8) if is_random_position(t, 0.25)] == [3, 7]
    randomised = random_order(units, 5)
    for m in range(1, len(units) + 1):
        served = set(plan.order[:m])
        assert set(randomised[: m // 4]) <= served  # floor(0.25 m) random units among the first m
    # The estimation sample is the random order's prefix of complete units, nothing else.
    complete = set(randomised[:6]) | set(plan.order[:20])
    assert estimation_sample(units, complete, 5) == randomised[: _prefix(randomised, complete)]


def _prefix(order: list[int], complete: set[int]) -> int:
    return next(i for i, unit in enumerate(order) if unit not in complete)


# --- the queue ----------------------------------------------------------------------------------


def _unit_of_item(session: Session, campaign_id: int) -> dict[str, int]:
    rows = session.exec(
        select(Item.item_id, Unit.id)
        .join(Unit, col(Unit.item_pk) == Item.id)
        .where(Unit.campaign_id == campaign_id)
    )
    return dict(rows.all())


def _judge_pairs(engine: Engine, verdicts: dict[str, dict[int, str]]) -> None:
    """Store pairwise judgements: judge → item number → canonical preference."""
    with session_scope(engine) as session:
        pairs = session.exec(select(Pair, Item.item_id).join(Item, col(Item.id) == Pair.item_pk))
        pair_of = {int(item_id.split("-")[1]): pair for pair, item_id in pairs}
        rows = [
            Judgement(
                judge=judge,
                protocol="pairwise",
                unit_key=f"p:item-{n}/left|item-{n}/right",
                pair_pk=pair_of[n].id,
                preference=preference,
            )
            for judge, by_item in verdicts.items()
            for n, preference in by_item.items()
            if n in pair_of  # a smaller campaign has fewer items
        ]
        insert_judgements(session, rows)


VERDICTS = {"j1": {0: "A", 1: "A", 2: "A", 3: "B"}, "j2": {0: "A", 1: "tie", 2: "B", 3: "B"}}
"""Item 2: opposite labels; item 1: A against tie (one judge is as surely wrong); items 0 and 3:
agree; item 4: not judged."""


def test_judge_disagreement_serves_the_most_disputed_unit_first_to_every_annotator(
    engine: Engine,
) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, items=5, protocol="pairwise", overlap=2)
    _judge_pairs(engine, VERDICTS)
    with session_scope(engine) as session:
        plan = set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
        unit = _unit_of_item(session, campaign_id)
    assert set(plan.order[:2]) == {unit["item-2"], unit["item-1"]}
    assert set(plan.order[2:4]) == {unit["item-0"], unit["item-3"]}
    assert plan.order[4] == unit["item-4"]
    first = _lease(engine, campaign_id, alice)
    assert first.unit_id == plan.order[0]
    assert _lease(engine, campaign_id, bob).unit_id == plan.order[0]  # depth first: K slots
    served = [first.unit_id]
    view = first
    while (view := _submit_next(engine, view, alice)) is not None:
        served.append(view.unit_id)
    assert tuple(served) == plan.order
    with Session(engine) as session:
        _check_counters(session, campaign_id)


def _submit_next(engine: Engine, view: queue.UnitView, annotator: int) -> queue.UnitView | None:
    _submit(engine, view, annotator)
    return _lease(engine, campaign_id=view.campaign_id, annotator_id=annotator)


def test_least_annotated_after_routing_serves_breadth_first_in_a_seeded_random_order(
    engine: Engine,
) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, items=3, protocol="pairwise", overlap=2)
    _judge_pairs(engine, VERDICTS)
    with session_scope(engine) as session:
        set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
        plan = set_routing(session, campaign_id, "least-annotated")
        assert plan.order == () and plan.note.startswith("least-annotated first")
        ranks = dict(session.exec(select(Unit.id, Unit.priority)).all())
    units = sorted(ranks)
    assert ranks == {unit: random_key(campaign_id, unit) >> 24 for unit in units}
    by_key = sorted(units, key=ranks.__getitem__)
    assert _lease(engine, campaign_id, alice).unit_id == by_key[0]
    assert _lease(engine, campaign_id, bob).unit_id == by_key[1]  # breadth first, as before


def test_least_annotated_serves_ties_in_a_seeded_random_order_not_by_id(
    any_engine: Engine,
) -> None:
    """PPI needs the labelled units of a campaign stopped part-way to be a random sample: among
    the least-annotated units the queue serves by each unit's seeded random key."""
    campaign_id, annotators = build_campaign(
        any_engine, items=12, protocol="pairwise", overlap=1, annotators=12
    )
    with Session(any_engine) as session:
        units = sorted(session.exec(select(Unit.id).where(Unit.campaign_id == campaign_id)))
    served = [_lease(any_engine, campaign_id, annotator).unit_id for annotator in annotators]
    assert served == sorted(units, key=lambda unit: random_key(campaign_id, unit))
    assert served != units  # 12 units: the id order by chance once in 479,001,600


def test_new_judgements_re_rank_a_routed_campaign(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, items=5, protocol="pairwise", overlap=1)
    with session_scope(engine) as session:
        plan = set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
        unit = _unit_of_item(session, campaign_id)
    assert plan.fell_back and "no unit was judged by two of the chosen judges" in plan.note
    _judge_pairs(engine, VERDICTS)  # judgements arrive after the routing was set
    with Session(engine) as session:
        rank = dict(session.exec(select(Unit.id, Unit.priority)).all())
    disputed = (unit["item-1"], unit["item-2"])
    assert rank[unit["item-0"]] > max(rank[u] for u in disputed)  # re-ranked: they come first
    assert _lease(engine, campaign_id, alice).unit_id == min(disputed, key=rank.__getitem__)


def test_routing_settings_are_checked() -> None:
    from data.services.routing import check_routing

    assert check_routing("stratified", ["j"], None) == ("stratified", ["j"], 0.2)
    for routing, judges, share, message in [
        ("random", None, None, "unknown routing 'random': choose one of least-annotated"),
        ("judge-disagreement", ["j"], None, "needs at least two judges"),
        ("judge-uncertainty", None, None, "needs the judges whose outputs order the queue"),
        ("judge-uncertainty", ["j"], 0.2, "applies only to stratified routing"),
        ("stratified", ["j"], 1.0, "the stratified share is 1.0, but it must be between 0 and 1"),
        ("least-annotated", ["j"], None, "uses no judges"),
        # the id rules: stored and shown raw before
        ("judge-uncertainty", ["j\u202ek"], None, "judge 'j\\\\u202ek' holds a bidirectional"),
        ("judge-disagreement", ["j", "a\nb"], None, "judge 'a\\\\nb' holds a control character"),
    ]:
        with pytest.raises(CampaignError, match=message):
            check_routing(routing, judges, share)
    # the page reads the option in the library's words; the CLI names its flag
    with pytest.raises(CampaignError) as refused:
        check_routing("judge-disagreement", ["j"], None)
    assert str(refused.value).endswith("to compare (routing judges)")
    assert refused.value.render(cli_flag).endswith("to compare (--routing-judges)")


@pytest.mark.parametrize("routing", ["least-annotated", "judge-disagreement", "stratified"])
def test_concurrent_leasing_with_routing_never_exceeds_overlap(
    any_engine: Engine, routing: str
) -> None:
    campaign_id, annotators = build_campaign(
        any_engine, items=15, protocol="pairwise", overlap=3, annotators=12
    )
    verdicts = {
        "j1": dict.fromkeys(range(15), "A"),
        "j2": {n: ("A", "B", "tie")[n % 3] for n in range(15)},
    }
    _judge_pairs(any_engine, verdicts)
    with session_scope(any_engine) as session:
        judges = None if routing == "least-annotated" else ["j1", "j2"]
        set_routing(session, campaign_id, routing, judges)
    submitted: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(len(annotators))

    def work(annotator: int) -> None:
        try:
            start.wait()
            view = _lease(any_engine, campaign_id, annotator)
            while view is not None:
                following = _submit_next(any_engine, view, annotator)
                with lock:
                    submitted.append((view.unit_id, annotator))
                view = following
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(a,)) for a in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(submitted) == len(set(submitted))
    per_unit = Counter(unit for unit, _ in submitted)
    assert len(per_unit) == 15 and set(per_unit.values()) == {3}
    with Session(any_engine) as session:
        stored = session.exec(select(Annotation.unit_id, Annotation.annotator_id)).all()
        assert sorted(stored) == sorted(submitted)
        _check_counters(session, campaign_id)


def test_stratified_estimation_sample_is_the_complete_random_prefix(engine: Engine) -> None:
    campaign_id, (alice,) = build_campaign(
        engine, items=8, protocol="pairwise", overlap=1, annotators=1
    )
    _judge_pairs(engine, VERDICTS)
    with session_scope(engine) as session:
        plan = set_routing(session, campaign_id, "stratified", ["j1", "j2"], share=0.5)
        units = sorted(plan.order)
    view = _lease(engine, campaign_id, alice)
    for _ in range(4):  # four units served and answered: positions 1 and 3 were random
        view = _submit_next(engine, view, alice)
    randomised = random_order(units, campaign_id)
    with session_scope(engine) as session:
        sample = campaign_estimation_sample(session, campaign_id)
    assert sample[:2] == randomised[:2] and set(sample) <= set(plan.order[:4])


def test_cli_create_with_routing_and_set_routing(engine: Engine, db_url: str) -> None:
    _, (annotator, _other) = build_campaign(engine, items=3, protocol="pairwise", overlap=1)
    _judge_pairs(engine, VERDICTS)
    runner = CliRunner()
    created = runner.invoke(app, [
        "--db", db_url, "campaign", "create", "routed", "--dataset", "ds-pairwise",
        "--protocol", "pairwise", "--routing", "judge-disagreement", "--routing-judges", "j1,j2",
    ])  # fmt: skip
    assert created.exit_code == 0, created.output
    assert "routing judge-disagreement: 3 of 3 units ordered by judge disagreement" in (
        created.output
    )
    bad = runner.invoke(app, [
        "--db", db_url, "campaign", "set-routing", "routed", "--routing", "stratified",
        "--routing-judges", "j1", "--stratified-share", "1.5",
    ])  # fmt: skip
    assert bad.exit_code == 2
    assert "the stratified share is 1.5, but it must be between 0 and 1" in bad.output
    assert "(--stratified-share)" in bad.output
    empty = runner.invoke(app, [
        "--db", db_url, "campaign", "set-routing", "routed", "--routing", "judge-disagreement",
        "--routing-judges", "j1,,j2",
    ])  # fmt: skip
    assert empty.exit_code == 2 and "has an empty name" in empty.output  # it was dropped
    done = runner.invoke(app, [
        "--db", db_url, "campaign", "set-routing", "routed", "--routing", "judge-uncertainty",
        "--routing-judges", "j1",
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "served least-annotated first instead" in done.output  # one verdict each: no signal
    with session_scope(engine) as session:
        campaign = get_campaign(session, "routed")
        assert (campaign.routing, campaign.routing_judges) == ("judge-uncertainty", ["j1"])
        units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id)).all()
        assert [unit.priority for unit in units] == [None] * len(units)
        # no rank: least-annotated first, ties by lowest id, as PROTOCOLS.md says
        served = queue.next_unit(session, campaign.id, annotator)
        assert served is not None and served.unit_id == min(unit.id for unit in units)


def test_unknown_response_is_not_a_reading(engine: Engine) -> None:
    """A judge's output on a response outside the campaign does not rank anything."""
    campaign_id, _ = build_campaign(engine, items=2, protocol="alignmmbench", overlap=1)
    with session_scope(engine) as session:
        response = session.exec(select(Response).where(Response.response_id == "item-0/left")).one()
        insert_judgements(session, [
            Judgement(judge=j, protocol="mmie", unit_key="r:item-0/left",
                      response_pk=response.id, score=s)
            for j, s in (("j1", 1.0), ("j2", 5.0))
        ])  # fmt: skip
        plan = set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
    assert plan.fell_back  # judged under another protocol than the campaign's


def test_uncertainty_reads_stored_probabilities_and_both_shown_orders(engine: Engine) -> None:
    campaign_id, _ = build_campaign(engine, items=3, protocol="pairwise", overlap=1)
    with session_scope(engine) as session:
        pair_of = {
            item_id: pair
            for pair, item_id in session.exec(
                select(Pair, Item.item_id).join(Item, col(Item.id) == Pair.item_pk)
            )
        }

        def row(item: str, order: str, preference: str, probs: dict | None) -> Judgement:
            n = item.split("-")[1]
            return Judgement(
                judge="critic", protocol="pairwise", unit_key=f"p:item-{n}/left|item-{n}/right",
                pair_pk=pair_of[item].id, shown_order=order, preference=preference,
                meta={"probs": probs} if probs else {},
            )  # fmt: skip

        insert_judgements(session, [
            row("item-0", "AB", "A", {"A": 0.9, "B": 0.05, "tie": 0.05}),  # (1 - 0.9) / (2/3)
            row("item-1", "AB", "A", None),
            row("item-1", "BA", "B", None),  # the two orders disagree: range 1
            row("item-2", "AB", "A", {"A": 0.4, "B": 0.35, "tie": 0.25}),  # 0.9
        ])  # fmt: skip
        plan = set_routing(session, campaign_id, "judge-uncertainty", ["critic"])
        unit = _unit_of_item(session, campaign_id)
    assert plan.order == (unit["item-1"], unit["item-2"], unit["item-0"])


def test_a_lone_annotator_past_the_window_still_gets_every_unit_in_rank_order(
    engine: Engine,
) -> None:
    """More own half-filled units than the window looks at: fresh units follow, in rank order,
    and the next annotator finishes the best-ranked half-filled one first."""
    campaign_id, (alice, bob) = build_campaign(engine, items=70, protocol="pairwise", overlap=2)
    _judge_pairs(engine, {"j1": dict.fromkeys(range(70), "A"),
                          "j2": {n: ("A", "B", "tie")[n % 3] for n in range(70)}})  # fmt: skip
    with session_scope(engine) as session:
        plan = set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
    served, view = [], _lease(engine, campaign_id, alice)
    while view is not None:
        served.append(view.unit_id)
        view = _submit_next(engine, view, alice)
    assert tuple(served) == plan.order  # 70 > the window of 64
    assert _lease(engine, campaign_id, bob).unit_id == plan.order[0]


def test_new_judgements_re_key_only_the_units_they_are_about(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, items=5, protocol="pairwise", overlap=1)
    _judge_pairs(engine, VERDICTS)
    with session_scope(engine) as session:
        set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
        unit = _unit_of_item(session, campaign_id)
        before = dict(session.exec(select(Unit.id, Unit.priority)).all())
    # j1 said A on item 4 (no j2 verdict yet); j2 now says B there: a full disagreement.
    _judge_pairs(engine, {"j1": {4: "A"}, "j2": {4: "B"}})
    with session_scope(engine) as session:
        after = dict(session.exec(select(Unit.id, Unit.priority)).all())
    changed = {u for u in after if after[u] != before[u]}
    assert changed == {unit["item-4"]}
    assert after[unit["item-4"]] == serving_key(1.0, campaign_id, unit["item-4"])
    first = _lease(engine, campaign_id, alice).unit_id
    assert first == min((unit[f"item-{n}"] for n in (1, 2, 4)), key=after.__getitem__)


def test_calibration_of_a_stratified_campaign_reads_only_its_estimation_sample(
    engine: Engine,
) -> None:
    from data.readmodels.campaign_input import read_calibration_input
    from data.storage.campaign_lookup import unit_key_map

    campaign_id, (alice,) = build_campaign(
        engine, items=8, protocol="pairwise", overlap=1, annotators=1
    )
    _judge_pairs(engine, VERDICTS)
    with session_scope(engine) as session:
        plan = set_routing(session, campaign_id, "stratified", ["j1", "j2"], share=0.5)
    view = _lease(engine, campaign_id, alice)
    for _ in range(4):
        view = _submit_next(engine, view, alice)
    with session_scope(engine) as session:
        sample = campaign_estimation_sample(session, campaign_id)
        keys = unit_key_map(session, campaign_id)
        source = read_calibration_input(session, campaign_id)
    assert 2 <= len(sample) <= 4 and set(sample) <= set(plan.order[:4])
    assert set(source.frame["unit"]) == {keys[unit] for unit in sample}
    assert source.estimation_units == len(sample)


@pytest.mark.slow  # a full calibration with bootstrap
def test_the_judge_audit_of_a_stratified_campaign_reads_only_its_estimation_sample(
    engine: Engine, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``calibrate --campaign``'s judge audit, the Calibration page's and the Campaigns page's
    report audit the same units as the calibration beside them: the estimation sample."""
    import json

    from annotate_app import calibration_worker
    from annotate_app.calibration_worker import CampaignScope, page_audit
    from annotate_app.campaign_report import CampaignReportRequest, build_campaign_report
    from data.readmodels.campaign_input import campaign_version
    from data.storage.campaign_lookup import unit_key_map

    campaign_id, (alice,) = build_campaign(
        engine, items=8, protocol="pairwise", overlap=1, annotators=1
    )
    _judge_pairs(engine, VERDICTS)
    with session_scope(engine) as session:
        set_routing(session, campaign_id, "stratified", ["j1", "j2"], share=0.5)
    view = _lease(engine, campaign_id, alice)
    for _ in range(6):
        view = _submit_next(engine, view, alice)
    with session_scope(engine) as session:
        keys = unit_key_map(session, campaign_id)
        sample = {keys[unit] for unit in campaign_estimation_sample(session, campaign_id)}
        judged = {u.unit_key for u in session.exec(select(Judgement)) if u.judge == "j1"}
        version = campaign_version(session, campaign_id)
        name = get_campaign(session, campaign_id).name
    assert 0 < len(sample & judged) < len(judged)  # the sample leaves judged units out
    url = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "calibration.json"
    written = CliRunner().invoke(
        app, ["--db", url, "calibrate", "--campaign", name, "--bootstrap", "20", "--json", out]
    )
    assert written.exit_code == 0, written.output
    cli_audit = json.loads(out.read_text())["judge_audit"]
    units = {cost["judge"]: cost["n_units"] for cost in cli_audit["costs"]}
    assert units == {"j1": len(sample & judged), "j2": len(sample & judged)}
    from data.readmodels import frames

    reads = []

    def counted(*args, **kwargs):
        reads.append(args)
        return frames.campaign_judgement_frame(*args, **kwargs)

    for module in ("data.readmodels.campaign_input", "annotate_app.campaign_calibration"):
        monkeypatch.setattr(f"{module}.campaign_judgement_frame", counted, raising=False)
    request = CampaignReportRequest(campaign=campaign_id, bootstrap=20)
    report = build_campaign_report(engine, request).files.result.judge_audit
    assert len(reads) == 1  # the report and its audit from one read of the campaign
    monkeypatch.undo()
    assert report is not None and report.model_dump(mode="json")["costs"] == cli_audit["costs"]
    try:
        scope = CampaignScope(url, campaign_id, version)
        page = page_audit(scope, ("j1", "j2"), None, (), 20)
    finally:
        calibration_worker.shutdown()
    assert [cost.n_units for cost in page.costs] == [len(sample & judged)] * 2


ALL_JUDGED = {
    "j1": {n: ("A", "B", "tie")[n % 3] for n in range(8)},
    "j2": {n: ("A", "A", "B", "tie")[n % 4] for n in range(8)},
}


def test_model_estimates_of_a_stratified_campaign_label_only_its_estimation_sample(
    engine: Engine,
) -> None:
    """The prediction-powered win rates take the estimation sample as the labelled units and
    every other judged unit (routed ones too, their human labels left out) as unlabelled."""
    from annotate_app.campaign_calibration import calibrate_campaign
    from calibration.model_estimates import WIN_RATE
    from data.readmodels.campaign_input import read_calibration_input

    campaign_id, (alice,) = build_campaign(
        engine, items=8, protocol="pairwise", overlap=1, annotators=1
    )
    _judge_pairs(engine, ALL_JUDGED)
    with session_scope(engine) as session:
        set_routing(session, campaign_id, "stratified", ["j1", "j2"], share=0.5)
    view = _lease(engine, campaign_id, alice)
    for _ in range(5):
        view = _submit_next(engine, view, alice)
    with session_scope(engine) as session:
        sample = campaign_estimation_sample(session, campaign_id)
        source = read_calibration_input(session, campaign_id)
    assert source.routing == "stratified" and source.outside_sample is not None
    estimates = calibrate_campaign(engine, source, bootstrap=0).report.result.model_estimates
    assert estimates is not None
    found = {(e.judge, e.model): e for e in estimates.estimates}
    assert set(found) == {(j, m) for j in ("j1", "j2") for m in ("left", "right")}
    for estimate in found.values():
        assert estimate.leaderboard == WIN_RATE
        assert (estimate.n_labelled, estimate.n_unlabelled) == (len(sample), 8 - len(sample))
    # left is model A of every pair: its judge-only win rate is A = 1, tie = 0.5 over 8 pairs
    win = {"A": 1.0, "tie": 0.5, "B": 0.0}
    for judge, verdicts in ALL_JUDGED.items():
        left = sum(win[v] for v in verdicts.values()) / 8
        assert found[(judge, "left")].judge_only == pytest.approx(left)
        assert found[(judge, "right")].judge_only == pytest.approx(1 - left)


def test_model_estimates_of_a_judge_routed_campaign_say_why_there_is_no_interval(
    engine: Engine,
) -> None:
    from annotate_app.campaign_calibration import calibrate_campaign
    from data.readmodels.campaign_input import read_calibration_input

    campaign_id, (alice,) = build_campaign(
        engine, items=8, protocol="pairwise", overlap=1, annotators=1
    )
    _judge_pairs(engine, ALL_JUDGED)
    with session_scope(engine) as session:
        set_routing(session, campaign_id, "judge-disagreement", ["j1", "j2"])
    view = _lease(engine, campaign_id, alice)
    for _ in range(4):
        view = _submit_next(engine, view, alice)
    with session_scope(engine) as session:
        source = read_calibration_input(session, campaign_id)
    estimates = calibrate_campaign(engine, source, bootstrap=0).report.result.model_estimates
    assert estimates is not None and estimates.sample.startswith("none")
    for estimate in estimates.estimates:
        assert estimate.prediction_powered is None and estimate.judge_only is not None
        assert "judge-disagreement" in (estimate.reason or "")
        assert estimate.humans_only is not None  # the labelled units' mean, shown as it is
