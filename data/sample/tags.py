"""Synthetic disagreement tags on a finished sample campaign, so that the dashboard's and the
report's "Why judges disagree" summary has something to show on the demo.

The tags are made the way a reviewer makes them on the *Disagreements* page: the judge's
disagreements come from :func:`data.services.disagreements.disagreement_queue` and each tag is
stored by :func:`data.services.disagreements.tag_disagreement` (audit event included), as the
demo reviewer. The queue needs the disagreements calibration finds, which this package may not
compute (``data`` does not import ``calibration``), so the caller hands in the function that
finds them (``critiquelab demo`` passes
:func:`annotate_app.disagreement_review.disagreement_entries`).

Which disagreements are tagged is a seeded random sample of each judge's queue (not its largest
gaps), so the per-judge shares are those of a random sample of its disagreements. The cause is
drawn, seeded, from what the synthetic judge did: a pointwise judge above the reference is
mostly "too lenient", below it mostly "too harsh"; a pairwise judge split between the two shown
orders mostly "position bias"; the rest spread over the content causes. Every note says the tag
is synthetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

from sqlmodel import Session, select

from data.readmodels.frames import campaign_judges
from data.sample.labels import BASE_TIME
from data.sample.synthetic import rng_for
from data.services.disagreements import (
    Disagreement,
    disagreement_queue,
    review_settings,
    tag_disagreement,
)
from schemas.core import stored_id
from schemas.disagreements import JudgeDisagreement
from schemas.tables import Campaign, DisagreementTag

DisagreementReader = Callable[[Session, int, str], Sequence[JudgeDisagreement]]
"""(campaign id, judge) → the judge's disagreements on the campaign, as calibration finds them."""

TAGGED_CAMPAIGN = "demo-alignmmbench-finished"
TAGS_PER_JUDGE = 6
_DIRECTED_SHARE = 0.6
"""How often the cause is the one the judge's direction suggests (too lenient / too harsh /
position bias); the rest are drawn from the content causes."""
_CONTENT_CAUSES = (
    "hallucinated content",
    "missed visual detail",
    "ignored the rubric",
    "human error",
)


def add_disagreement_tags(
    session: Session, reviewer_id: int, disagreements: DisagreementReader
) -> int:
    """Tag up to :data:`TAGS_PER_JUDGE` disagreements of each judge of :data:`TAGGED_CAMPAIGN`
    that has no tag there yet; return how many tags were added."""
    campaign = session.exec(select(Campaign).where(Campaign.name == TAGGED_CAMPAIGN)).first()
    if campaign is None:
        return 0
    campaign_id = stored_id(campaign)
    tagged = set(
        session.exec(
            select(DisagreementTag.judge).where(DisagreementTag.campaign_id == campaign_id)
        )
    )
    judges = [judge for judge in campaign_judges(session, campaign_id) if judge not in tagged]
    if not judges:
        return 0
    session.flush()
    taxonomy = review_settings(campaign).taxonomy
    added = 0
    for judge in judges:
        found = disagreements(session, campaign_id, judge)
        queue = disagreement_queue(session, reviewer_id, campaign_id, judge, found)
        rng = rng_for("disagreement-tags", campaign.name, judge)
        chosen = rng.sample(queue, min(TAGS_PER_JUDGE, len(queue)))
        for entry in sorted(chosen, key=lambda e: e.unit_key):
            cause = _cause(entry, taxonomy)
            note = (
                f"Synthetic demo tag (critiquelab demo): judge {entry.judge_value}, "
                f"humans {entry.reference_value}."
            )
            tag = tag_disagreement(session, reviewer_id, entry, cause=cause, note=note)
            tag.created_at = BASE_TIME + timedelta(days=1, minutes=added)
            session.add(tag)
            added += 1
    return added


def _cause(entry: Disagreement, taxonomy: tuple[str, ...]) -> str:
    """A seeded cause for one disagreement, among the campaign's taxonomy."""
    rng = rng_for("disagreement-cause", entry.unit_key, entry.judge)
    directed = _directed_cause(entry)
    if directed in taxonomy and rng.random() < _DIRECTED_SHARE:
        return str(directed)
    content = [cause for cause in _CONTENT_CAUSES if cause in taxonomy]
    return rng.choice(content or [c for c in taxonomy if c != "other"] or list(taxonomy))


def _directed_cause(entry: Disagreement) -> str | None:
    """What the judge's verdict suggests: too lenient / too harsh (scores), position bias (a
    preference split between the two shown orders, shown as e.g. ``A×1 B×1``), else None."""
    try:
        judge, reference = float(entry.judge_value), float(entry.reference_value)
    except ValueError:
        return "position bias" if "×" in entry.judge_value else None
    return "too lenient" if judge > reference else "too harsh"
