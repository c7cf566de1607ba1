"""Gold units for the open sample campaigns: known answers with explanations, chosen from the
units whose answer is clear-cut, and the gold settings (a qualification step on
``demo-alignmmbench-open``), so that the gold accuracy, the Annotators view and the robust
reference have something true to show once someone annotates there.

Everything goes through :mod:`data.services.gold` (:func:`~data.services.gold.attach_gold`,
:func:`~data.services.gold.set_gold_settings`), as an admin would do it, and only what is
missing: a campaign that already has gold units keeps them, and settings already in place are
not written again (no audit event either). The units are drawn with a seed per campaign, so two
builds choose the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, func, select

from data.sample.dataset import ResponseTruth
from data.sample.rationales import gold_explanation, gold_pair_explanation
from data.sample.seeds import ALIGNMMBENCH_TIERS, MMIE_TIERS
from data.sample.synthetic import rng_for
from data.services.gold import GoldEntry, attach_gold, set_gold_settings
from data.storage.campaign_lookup import unit_keys
from schemas.ids import parse_unit_key
from schemas.tables import Campaign, Unit


@dataclass(frozen=True)
class GoldPlan:
    """How many gold units an open sample campaign gets, and its gold settings."""

    campaign: str
    units: int
    gold_rate: float
    gold_feedback: bool
    qualification_gold: int = 0
    qualification_accuracy: float = 0.0


GOLD_PLANS: tuple[GoldPlan, ...] = (
    GoldPlan(
        "demo-alignmmbench-open",
        units=8,
        gold_rate=0.1,
        gold_feedback=True,
        qualification_gold=3,
        qualification_accuracy=2 / 3,
    ),
    GoldPlan("demo-mmie-open", units=4, gold_rate=0.1, gold_feedback=False),
    GoldPlan("demo-pairwise-open", units=4, gold_rate=0.1, gold_feedback=False),
)
"""A training campaign (qualification: 3 gold units, 2 of 3 within one point; feedback after
each gold answer) and two audit campaigns (gold mixed in at one unit in ten, no feedback)."""


def add_gold(session: Session, truths: dict[str, ResponseTruth], admin_id: int) -> tuple[int, int]:
    """Attach the planned gold units and settings to the open sample campaigns that lack them;
    ``(gold units added, settings changed)``."""
    added = changed = 0
    for plan in GOLD_PLANS:
        campaign = session.exec(select(Campaign).where(Campaign.name == plan.campaign)).first()
        if campaign is None or campaign.status == "closed":
            continue
        assert campaign.id is not None
        has_gold = session.exec(
            select(func.count()).where(Unit.campaign_id == campaign.id, col(Unit.gold).is_(True))
        ).one()
        if not has_gold:
            entries = gold_entries(session, campaign, truths, plan.units)
            added += attach_gold(
                session, campaign, entries, actor_id=admin_id, source="critiquelab demo"
            ).added
        changed += len(
            set_gold_settings(
                session,
                campaign.id,
                gold_rate=plan.gold_rate,
                gold_feedback=plan.gold_feedback,
                qualification_gold=plan.qualification_gold,
                qualification_accuracy=plan.qualification_accuracy,
                actor_id=admin_id,
            )
        )
    return added, changed


def gold_entries(
    session: Session, campaign: Campaign, truths: dict[str, ResponseTruth], count: int
) -> list[GoldEntry]:
    """``count`` known answers for clear-cut units of ``campaign`` (seeded by its name).

    Pointwise: a response near the centre of its tier, expected to get that centre rounded to
    the scale (an honest annotator lands within one point). Pairwise: two responses two or more
    tiers apart, expected to prefer the better one."""
    assert campaign.id is not None
    clear: list[GoldEntry] = []
    for _, key, _, flagged in sorted(unit_keys(session, campaign.id), key=lambda row: row[1]):
        if flagged:
            continue
        found = [truths[r] for r in parse_unit_key(key).response_ids]
        entry = _pair_entry(key, found) if len(found) == 2 else _score_entry(key, found[0])
        if entry is not None:
            clear.append(entry)
    rng = rng_for("gold", campaign.name)
    chosen = rng.sample(clear, min(count, len(clear)))
    return sorted(chosen, key=lambda entry: entry.unit)


def _tiers(truth: ResponseTruth) -> dict[str, float]:
    return MMIE_TIERS if truth.protocol == "mmie" else ALIGNMMBENCH_TIERS


def _score_entry(key: str, truth: ResponseTruth) -> GoldEntry | None:
    centre = _tiers(truth)[truth.tier]
    if abs(truth.quality - centre) > 0.4:
        return None
    score = float(round(centre))  # every tier centre rounds to a point of its scale
    return GoldEntry(key, score=score, explanation=gold_explanation(truth, score))


def _pair_entry(key: str, pair: list[ResponseTruth]) -> GoldEntry | None:
    a, b = pair
    tiers = list(_tiers(a))
    gap = tiers.index(b.tier) - tiers.index(a.tier)  # > 0: A is in a better tier
    if abs(gap) < 2:
        return None
    better = "A" if gap > 0 else "B"
    winner, loser = (a, b) if better == "A" else (b, a)
    return GoldEntry(key, preference=better, explanation=gold_pair_explanation(winner, loser))
