"""Small, explicit campaigns for the admin and reviewer tests.

Accounts, a dataset and a campaign (built by ``data.services.campaigns.create_campaign``), and
answers
written as the rows the annotation queue writes (a submitted assignment plus a live annotation),
so each test states exactly which annotator said what on which unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sqlalchemy import func
from sqlmodel import Session, select

from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import hash_password
from schemas.tables import Annotation, Assignment, Campaign, Dataset, Item, Response, Unit, User

PASSWORD = "correct horse battery"
ROLES_BY_NAME = {"root": "admin", "rita": "reviewer", "ann": "annotator", "bob": "annotator",
                 "cat": "annotator"}  # fmt: skip


@cache
def _password_hash() -> str:
    return hash_password(PASSWORD)


@dataclass(frozen=True)
class People:
    """User ids by name: ``root`` admin, ``rita`` reviewer, ``ann``/``bob``/``cat`` annotators."""

    ids: dict[str, int]

    def __getitem__(self, name: str) -> int:
        return self.ids[name]


def add_people(session: Session) -> People:
    """The five accounts of :data:`ROLES_BY_NAME`, all with password :data:`PASSWORD`."""
    ids = {}
    for name, role in ROLES_BY_NAME.items():
        user = User(name=name, password_hash=_password_hash(), role=role)
        session.add(user)
        session.flush()
        ids[name] = user.id
    return People(ids)


def add_dataset(
    session: Session,
    name: str = "ds",
    *,
    items: int = 3,
    models: tuple[str, ...] = ("m1", "m2"),
    tasks: tuple[str, ...] = ("OCR", "Counting"),
) -> Dataset:
    """``items`` items (tasks in turn), each answered by every model in ``models``."""
    dataset = Dataset(name=name, benchmark="alignmmbench")
    session.add(dataset)
    session.flush()
    for index in range(items):
        item = Item(
            dataset_id=dataset.id, item_id=f"{name}-item-{index}", benchmark="alignmmbench",
            task=tasks[index % len(tasks)], question=f"Question {index}?",
            reference=f"Reference answer {index}.", content_sha256=f"{name}{index}",
        )  # fmt: skip
        session.add(item)
        session.flush()
        for model in models:
            session.add(
                Response(
                    response_id=f"{name}-item-{index}/{model}",
                    item_pk=item.id,
                    model=model,
                    content=f"The answer of {model} to question {index} is long enough to copy.",
                    content_sha256=f"{name}{index}{model}",
                )  # fmt: skip
            )
    session.flush()
    return dataset


def add_campaign(
    session: Session,
    name: str = "camp",
    *,
    dataset: str = "ds",
    protocol: str = "alignmmbench",
    overlap: int = 3,
    actor_id: int | None = None,
) -> Campaign:
    """A campaign over ``dataset``; pairwise campaigns use every pair of each item."""
    spec = CampaignSpec(
        name=name, dataset=dataset, protocol=protocol, overlap=overlap,
        pairs="all" if protocol == "pairwise" else "dataset",
    )  # fmt: skip
    return create_campaign(session, spec, actor_id=actor_id)


def units_of(session: Session, campaign_id: int) -> list[Unit]:
    return list(session.exec(select(Unit).where(Unit.campaign_id == campaign_id).order_by(Unit.id)))


def answer(
    session: Session,
    unit: Unit,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str = "A considered reason for this label.",
    seconds: float = 30.0,
) -> Annotation:
    """A submitted answer, as the queue stores it (assignment on the next slot + annotation)."""
    campaign = session.get(Campaign, unit.campaign_id)
    slot = session.exec(select(func.count()).where(Assignment.unit_id == unit.id)).one()
    assignment = Assignment(
        campaign_id=unit.campaign_id, unit_id=unit.id, annotator_id=annotator_id, slot=slot,
        overlap=campaign.overlap, status="submitted",
    )  # fmt: skip
    session.add(assignment)
    session.flush()
    annotation = Annotation(
        campaign_id=unit.campaign_id, unit_id=unit.id, annotator_id=annotator_id,
        assignment_id=assignment.id, score=score, preference=preference,
        shown_order="AB" if preference else None, rationale=rationale, seconds=seconds,
    )  # fmt: skip
    session.add(annotation)
    unit.n_submitted += 1
    unit.slots_taken += 1
    session.add(unit)
    session.flush()
    return annotation
