"""Campaign creation: units per response or pair, pair generation, progress."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from data.services.campaign_progress import campaign_progress
from data.services.campaigns import CampaignSpec, create_campaign, pair_sampling_text
from data.services.users import create_user
from data.storage.campaign_lookup import CampaignError, get_campaign, unit_key_map
from data.storage.engine import session_scope
from schemas.tables import (
    Annotation,
    Assignment,
    AuditEvent,
    Campaign,
    Dataset,
    Item,
    Pair,
    Response,
    Unit,
)

MODELS = ("m-a", "m-b", "m-c", "m-d")


def _dataset(engine: Engine, *, items: int = 3, imported_pairs: bool = False) -> None:
    with session_scope(engine) as session:
        dataset = Dataset(name="toy", benchmark="generic")
        session.add(dataset)
        session.flush()
        for n in range(items):
            item = Item(
                dataset_id=dataset.id, item_id=f"i{n}", benchmark="generic",
                question=f"q{n}", content_sha256="x",
            )  # fmt: skip
            session.add(item)
            session.flush()
            responses = [
                Response(
                    response_id=f"i{n}/{m}",
                    item_pk=item.id,
                    model=m,
                    content=m,
                    content_sha256="x",
                )  # fmt: skip
                for m in MODELS
            ]
            session.add_all(responses)
            session.flush()
            if imported_pairs:
                session.add(
                    Pair(item_pk=item.id, response_a_pk=responses[0].id,
                         response_b_pk=responses[1].id)
                )  # fmt: skip


def test_pointwise_campaign_has_one_unit_per_selected_response(engine: Engine) -> None:
    _dataset(engine)
    with session_scope(engine) as session:
        campaign = create_campaign(
            session, CampaignSpec("c1", "toy", "alignmmbench", overlap=2, models=("m-a", "m-c"))
        )
        keys = sorted(unit_key_map(session, campaign.id).values())
        events = list(
            session.exec(select(AuditEvent).where(AuditEvent.action == "campaign.create"))
        )
    assert keys == sorted(f"r:i{n}/{m}" for n in range(3) for m in ("m-a", "m-c"))
    assert len(events) == 1 and events[0].detail["units"] == 6


def test_pairwise_all_generates_every_pair_in_canonical_order(engine: Engine) -> None:
    _dataset(engine, items=2)
    with session_scope(engine) as session:
        campaign = create_campaign(session, CampaignSpec("p", "toy", "pairwise", pairs="all"))
        keys = sorted(unit_key_map(session, campaign.id).values())
        sources = set(session.exec(select(Pair.source)))
    expected = sorted(
        f"p:i{n}/{a}|i{n}/{b}" for n in range(2) for a, b in itertools.combinations(MODELS, 2)
    )
    assert keys == expected
    assert sources == {"generated"}


def test_pairwise_sample_is_seeded_and_reuses_pairs(engine: Engine) -> None:
    _dataset(engine, items=5)
    with session_scope(engine) as session:
        first = create_campaign(
            session, CampaignSpec("s1", "toy", "pairwise", pairs="sample", pairs_per_item=2, seed=7)
        )
        again = create_campaign(
            session, CampaignSpec("s2", "toy", "pairwise", pairs="sample", pairs_per_item=2, seed=7)
        )
        other = create_campaign(
            session, CampaignSpec("s3", "toy", "pairwise", pairs="sample", pairs_per_item=2, seed=8)
        )
        keys = [sorted(unit_key_map(session, c.id).values()) for c in (first, again, other)]
        n_pairs = len(list(session.exec(select(Pair))))
        # the Campaigns page's words for it (it showed the stored dict)
        assert pair_sampling_text(first) == "2 pairs per item (seed 7)"
    assert len(keys[0]) == 10 and all(key.startswith("p:i") for key in keys[0])
    assert keys[0] == keys[1]
    assert keys[0] != keys[2]
    assert n_pairs == len(set(keys[0]) | set(keys[2]))


def test_pairwise_from_dataset_and_error_without_imported_pairs(engine: Engine) -> None:
    _dataset(engine, imported_pairs=True)
    with session_scope(engine) as session:
        campaign = create_campaign(session, CampaignSpec("d", "toy", "pairwise"))
        assert sorted(unit_key_map(session, campaign.id).values()) == [
            f"p:i{n}/m-a|i{n}/m-b" for n in range(3)
        ]
        no_pairs = "has no imported pairs.*use pairs all or pairs per item"
        with pytest.raises(CampaignError, match=no_pairs):
            create_campaign(session, CampaignSpec("d2", "toy", "pairwise", models=("m-c", "m-d")))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (CampaignSpec("x", "nope", "alignmmbench"), "no dataset called 'nope'"),
        (CampaignSpec("x", "toy", "likert"), "unknown protocol 'likert'"),
        (CampaignSpec("x", "toy", "score"), "needs a scale"),
        (CampaignSpec("x", "toy", "alignmmbench", overlap=0), "overlap is 0"),
        (CampaignSpec("x", "toy", "pairwise", pairs="sample"), "needs pairs per item of 1 or more"),
        (CampaignSpec("x", "toy", "mmie", scale=(1, 5, 1)), "applies to the score protocol only"),
        (CampaignSpec("x", "toy", "mmie", models=("zzz",)), "no responses of model(s) zzz"),
        (CampaignSpec("amb\u202e1", "toy", "mmie"), "holds a bidirectional control (U+202E)"),
        (CampaignSpec("amb-1 ", "toy", "mmie"), "starts or ends with white space"),
    ],
)
def test_bad_specs_are_refused_and_nothing_is_written(
    engine: Engine, spec: CampaignSpec, message: str
) -> None:
    _dataset(engine)
    with (
        pytest.raises(ValueError, match=re.escape(message)),
        session_scope(engine) as session,
    ):
        create_campaign(session, spec)
    with session_scope(engine) as session:
        assert list(session.exec(select(Unit))) == []


def test_score_campaign_stores_its_scale_and_name_must_be_new(engine: Engine) -> None:
    _dataset(engine)
    with session_scope(engine) as session:
        create_campaign(session, CampaignSpec("likert", "toy", "score", scale=(1, 5, 1)))
    with session_scope(engine) as session:
        campaign = get_campaign(session, "likert")
        assert (campaign.scale_min, campaign.scale_max, campaign.scale_step) == (1, 5, 1)
        with pytest.raises(CampaignError, match="already exists"):
            create_campaign(session, CampaignSpec("likert", "toy", "mmie"))
        with pytest.raises(
            CampaignError, match="no campaign called 'nope' .*known campaigns: likert"
        ):
            get_campaign(session, "nope")


def test_progress_counts_live_annotations_per_annotator_and_unit(engine: Engine) -> None:
    _dataset(engine, items=1)
    with session_scope(engine) as session:
        alice = create_user(session, "alice", "password1", "annotator")
        bob = create_user(session, "bob", "password1", "annotator")
        campaign = create_campaign(session, CampaignSpec("c", "toy", "mmie", overlap=2))
        units = list(session.exec(select(Unit).order_by(Unit.id)))
        for user, unit, seconds, slot, revision in (
            (alice, units[0], 30.0, 0, 1),
            (bob, units[0], 50.0, 1, 1),
            (alice, units[1], 10.0, 0, 2),
        ):
            session.add(
                Assignment(campaign_id=campaign.id, unit_id=unit.id, annotator_id=user.id,
                           slot=slot, overlap=2, status="submitted")
            )  # fmt: skip
            session.add(
                Annotation(campaign_id=campaign.id, unit_id=unit.id, annotator_id=user.id,
                           score=3, rationale="because", seconds=seconds, revision=revision)
            )  # fmt: skip
        # alice's retired first revision of unit 2 does not count
        session.add(
            Annotation(campaign_id=campaign.id, unit_id=units[1].id, annotator_id=alice.id,
                       score=2, rationale="old", seconds=99.0, revision=1, is_live=False)
        )  # fmt: skip
        session.add(
            Assignment(campaign_id=campaign.id, unit_id=units[2].id, annotator_id=bob.id,
                       slot=0, overlap=2, status="leased")
        )  # fmt: skip
    with session_scope(engine) as session:
        progress = campaign_progress(session, campaign.id)
    assert (progress.units, progress.units_complete, progress.annotations) == (4, 1, 3)
    assert progress.median_seconds_per_unit == 30.0
    by_name = {a.annotator: a for a in progress.by_annotator}
    assert (by_name["alice"].submitted, by_name["alice"].total_seconds) == (2, 40.0)
    assert (by_name["bob"].submitted, by_name["bob"].leased) == (1, 1)
    first = progress.by_unit[0]
    assert (first.unit_key, first.submitted, first.median_seconds) == ("r:i0/m-a", 2, 40.0)
    assert progress.by_unit[2].leased == 1 and math.isnan(progress.by_unit[3].median_seconds)


def test_a_pairwise_campaign_refuses_stored_ids_whose_pair_keys_could_collide(
    engine: Engine,
) -> None:
    """Responses x|y, z (item 1) and x, y|z (item 2) stored before imports refused '|': their
    pairs both had the key p:x|y|z, so the campaign counted one unit for two."""
    with session_scope(engine) as session:
        dataset = Dataset(name="legacy", benchmark="generic")
        session.add(dataset)
        session.flush()
        for n, ids in enumerate((("x|y", "z"), ("x", "y|z"))):
            item = Item(dataset_id=dataset.id, item_id=f"i{n}", benchmark="generic",
                        question="q", content_sha256="x")  # fmt: skip
            session.add(item)
            session.flush()
            session.add_all(
                Response(
                    response_id=rid, item_pk=item.id, model=f"m{k}", content="c", content_sha256="x"
                )  # fmt: skip
                for k, rid in enumerate(ids)
            )
    with (
        pytest.raises(CampaignError, match=r"response 'x\|y' holds '\|'.*share a unit key"),
        session_scope(engine) as session,
    ):
        create_campaign(session, CampaignSpec("pw", "legacy", "pairwise", pairs="all"))
    with session_scope(engine) as session:
        assert session.exec(select(Campaign)).all() == []
        # pointwise keys r:<id> cannot collide: that campaign is fine
        campaign = create_campaign(session, CampaignSpec("pt", "legacy", "mmie"))
        assert len(set(unit_key_map(session, campaign.id).values())) == 4
