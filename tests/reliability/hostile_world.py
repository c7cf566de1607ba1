"""A small project whose every free-text field carries script and HTML payloads, and whose other
people's answers and judge outputs carry secret markers an annotator must never see.

Two units: ``ann`` has answered one (her own rationale is hostile too) and holds a lease on the
other, which ``bob`` has answered and a model judge has scored. So on every page ``ann`` opens
there is something she may see (her own answer, the unit) next to something she may not.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from data import queue
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import UserRecord, create_user
from data.storage.engine import session_scope
from schemas.tables import Dataset, Flag, Item, Judgement, Response

PAYLOADS: tuple[str, ...] = (
    "<script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "[click me](javascript:window.__pwned='link')",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "<iframe src=\"javascript:parent.__pwned='iframe'\"></iframe>",
    "![tracker](http://evil.example/pixel.png)",
    '<a href="http://evil.example/">outside</a>',
    "<style>body{display:none}</style>",
)
HOSTILE = " ".join(PAYLOADS)
# no ASCII punctuation: shown text has it backslash-escaped, which would hide a marker that held it
BOB_SECRET = "BOBSECRET7f3a"
JUDGE_SECRET = "JUDGESECRET91c2"
PASSWORD = "correct horse battery"


@dataclass(frozen=True)
class HostileWorld:
    campaign_id: int
    campaign_name: str
    ann: UserRecord
    bob: UserRecord
    admin: UserRecord
    ann_unit: int
    """the unit ``ann`` holds a lease on, answered by bob and judged by a model"""
    bob_annotation_id: int


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build_hostile_world(engine: Engine) -> HostileWorld:
    with session_scope(engine) as session:
        ann = create_user(session, "ann", PASSWORD, "annotator")
        bob = create_user(session, "bob", PASSWORD, "annotator")
        admin = create_user(session, "root", PASSWORD, "admin")
        dataset = Dataset(name="hostile", benchmark="alignmmbench", description=HOSTILE)
        session.add(dataset)
        session.flush()
        for n in range(2):
            item = Item(
                dataset_id=dataset.id, item_id=f"x{n}", benchmark="alignmmbench",
                task="Counting", category="Perception & Understanding", group="g",
                history=[{"role": "user", "content": f"Earlier turn {HOSTILE}"},
                         {"role": "assistant", "content": f"Earlier answer {HOSTILE}"}],
                question=[{"type": "text", "text": f"Question {n} {HOSTILE}"}],
                reference=f"Reference {HOSTILE}", meta={}, content_sha256=_sha(f"i{n}"),
            )  # fmt: skip
            session.add(item)
            session.flush()
            session.add(
                Response(
                    response_id=f"x{n}/m",
                    item_pk=item.id,
                    model="m",
                    content=f"Response {n} {HOSTILE}",
                    meta={},
                    content_sha256=_sha(f"r{n}"),
                )  # fmt: skip
            )
        session.flush()
        campaign = create_campaign(
            session,
            CampaignSpec(name="hostile-campaign", dataset="hostile", protocol="alignmmbench",
                         overlap=2, rationale_min=5, show_others_after_submit=True,
                         instructions=f"Instructions {HOSTILE}"),
        )  # fmt: skip
        bob_view = queue.next_unit(session, campaign.id, bob.id)
        assert bob_view is not None
        bob_answer = queue.submit(session, bob_view.assignment_id, bob.id, score=9.0,
                                  rationale=f"{BOB_SECRET} {HOSTILE}")  # fmt: skip
        ann_first = queue.next_unit(session, campaign.id, ann.id)
        assert ann_first is not None and ann_first.unit_id != bob_view.unit_id
        queue.submit(session, ann_first.assignment_id, ann.id, score=3.0,
                     rationale=f"Ann's own answer {HOSTILE}")  # fmt: skip
        ann_now = queue.next_unit(session, campaign.id, ann.id)
        assert ann_now is not None and ann_now.unit_id == bob_view.unit_id
        response_id = bob_view.responses[0].response_id
        session.add(
            Judgement(
                judge="gpt-4",
                protocol="alignmmbench",
                unit_key=f"r:{response_id}",
                response_pk=_response_pk(session, response_id),
                score=2.0,
                rationale=f"{JUDGE_SECRET} {HOSTILE}",
                raw_output=f"{JUDGE_SECRET} raw {HOSTILE}",
                prompt_id="p@1",
            )  # fmt: skip
        )
        session.add(Flag(campaign_id=campaign.id, unit_id=ann_first.unit_id, user_id=bob.id,
                         reason=f"Flag reason {HOSTILE}"))  # fmt: skip
        return HostileWorld(campaign.id, campaign.name, ann, bob, admin, ann_now.unit_id,
                            bob_answer.id)  # fmt: skip


def _response_pk(session, response_id: str) -> int:  # type: ignore[no-untyped-def]
    from sqlmodel import select

    return session.exec(select(Response.id).where(Response.response_id == response_id)).one()


GOLD_SECRET = "GOLDSECRET5d1e"
"""In the explanation of a gold unit's known answer: shown to an annotator only as feedback, after
they submitted that unit, in a campaign that gives feedback."""
GOLD_EXPECTED = "73.25"
"""The gold unit's expected score (on a 0–100 continuous scale: a number nothing else shows)."""


@dataclass(frozen=True)
class GoldWorld:
    campaign_id: int
    campaign_name: str
    cat: UserRecord
    """a fresh annotator, qualifying: the first unit the queue serves her is the gold one"""
    gold_unit: int
    real_unit: int


def build_gold_world(engine: Engine, *, feedback: bool) -> GoldWorld:
    """:func:`build_hostile_world`'s project plus a campaign on the same two (hostile) items, one
    of them gold with :data:`GOLD_SECRET` in its explanation; a qualification of one gold unit
    (any answer passes) and ``gold_feedback`` as given."""
    from data.services.gold import GoldEntry, attach_gold, set_gold_settings
    from schemas.tables import Unit

    build_hostile_world(engine)
    name = "hostile-training" if feedback else "hostile-audit"  # no "gold" in it
    with session_scope(engine) as session:
        cat = create_user(session, "cat", PASSWORD, "annotator")
        campaign = create_campaign(
            session,
            CampaignSpec(name=name, dataset="hostile", protocol="score", scale=(0, 100, None),
                         overlap=2, rationale_min=5, instructions=f"Instructions {HOSTILE}"),
        )  # fmt: skip
        explanation = f"{GOLD_SECRET} {HOSTILE}"
        attach_gold(
            session, campaign, [GoldEntry("r:x0/m", float(GOLD_EXPECTED), None, explanation)]
        )
        set_gold_settings(
            session, name, qualification_gold=1, qualification_accuracy=0.0, gold_feedback=feedback
        )
        from sqlmodel import select

        units = {
            unit.gold: unit.id
            for unit in session.exec(select(Unit).where(Unit.campaign_id == campaign.id))
        }
        assert campaign.id is not None and None not in units.values()
        return GoldWorld(campaign.id, name, cat, units[True], units[False])  # type: ignore[arg-type]
