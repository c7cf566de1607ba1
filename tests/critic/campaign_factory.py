"""A small annotated campaign built straight into a test database.

Six AlignMMBench-style items (two with an image in the data folder), two model responses each,
three annotators with scores and rationales, one adjudication; and a pairwise campaign over the
same responses with preferences in the order each annotator was shown.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from PIL import Image
from sqlalchemy.engine import Engine
from sqlmodel import select

from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import create_user
from data.storage.engine import data_dir, session_scope
from schemas.protocols import to_canonical
from schemas.tables import Adjudication, Annotation, Dataset, Item, Response, Unit

TASKS = ("Counting", "OCR", "Description", "Reasoning", "Chart", "Writing")
ANNOTATORS = ("alice", "bob", "carol")
IMAGE_PATH = "images/red.png"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build_annotated_campaigns(engine: Engine) -> dict[str, str]:
    """Create the dataset, a pointwise and a pairwise campaign, annotations; return their names."""
    folder = data_dir(engine.url.render_as_string(hide_password=False))
    (folder / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 30), (200, 30, 30)).save(folder / IMAGE_PATH)
    with session_scope(engine) as session:
        dataset = Dataset(name="tiny", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        for index, task in enumerate(TASKS):
            question: object = f"Question {index}: how many apples are on the table?"
            if index < 2:
                question = [
                    {"type": "image", "image": IMAGE_PATH},
                    {"type": "text", "text": str(question)},
                ]
            item = Item(
                dataset_id=dataset.id,
                item_id=f"item-{index}",
                benchmark="alignmmbench",
                task=task,
                category="Perception & Understanding",
                group=f"g{index // 2}",
                history=[],
                question=question,
                reference=f"There are {index + 2} apples.",
                meta={},
                content_sha256=_sha(f"item{index}"),
            )
            session.add(item)
            session.flush()
            for model in ("model-x", "model-y"):
                answer = f"I count {index + 2 if model == 'model-x' else index + 5} apples."
                session.add(
                    Response(
                        response_id=f"item-{index}/{model}",
                        item_pk=item.id,
                        model=model,
                        content=answer,
                        meta={},
                        content_sha256=_sha(answer),
                    )
                )
        users = {
            name: create_user(session, name, "password123", "annotator").id for name in ANNOTATORS
        }
        reviewer = create_user(session, "rita", "password123", "reviewer").id
        pointwise = create_campaign(
            session, CampaignSpec(name="amb", dataset="tiny", protocol="alignmmbench")
        )
        pairwise = create_campaign(
            session, CampaignSpec(name="pairs", dataset="tiny", protocol="pairwise", pairs="all")
        )
        session.flush()
        for unit in session.exec(select(Unit).where(Unit.campaign_id == pointwise.id)).all():
            response = session.get(Response, unit.response_pk)
            good = response.model == "model-x"
            for offset, name in enumerate(ANNOTATORS):
                score = (8 if good else 3) + (offset - 1)
                reason = "The count matches the reference." if good else "The count is wrong."
                session.add(
                    Annotation(
                        campaign_id=pointwise.id,
                        unit_id=unit.id,
                        annotator_id=users[name],
                        score=score,
                        rationale=f"{reason} ({name})",
                        seconds=12.0,
                    )
                )
            if unit.id == 1:
                session.add(
                    Adjudication(
                        campaign_id=pointwise.id, unit_id=unit.id, reviewer_id=reviewer, score=9
                    )
                )
        for unit in session.exec(select(Unit).where(Unit.campaign_id == pairwise.id)).all():
            for offset, name in enumerate(ANNOTATORS):
                shown = "BA" if offset == 1 else "AB"
                shown_label = "A" if shown == "AB" else "B"  # everybody prefers model-x
                session.add(
                    Annotation(
                        campaign_id=pairwise.id,
                        unit_id=unit.id,
                        annotator_id=users[name],
                        preference=to_canonical(shown_label, swapped=shown == "BA"),
                        shown_order=shown,
                        rationale=f"model-x counts right ({name})",
                    )
                )
    return {"pointwise": "amb", "pairwise": "pairs"}


def data_folder(engine: Engine) -> Path:
    return data_dir(engine.url.render_as_string(hide_password=False))


SHORT_TEMPLATE = '''
id = "short-amb"
version = 3
protocol = "alignmmbench"
language = "en"
system = "Judge."
sees_images = "See images."
no_images = "No images."
instructions = "Rate {scale}."
guidance = ""
output = "Answer as JSON."
target = """{{"Rating": {value}, "Reason": {reason_json}}}"""

[headers]
history = "H"
question = "Q"
reference = "R"
answer = "A"
answer_a = "A1"
answer_b = "A2"
user = "U"
assistant = "S"
image = "img"
'''
"""A deliberately short user template: keeps the tiny models' sequences short in tests."""


def write_short_template(folder: Path) -> Path:
    path = folder / "short-amb.toml"
    path.write_text(SHORT_TEMPLATE, encoding="utf-8")
    return path


def build_mmie_campaign(engine: Engine) -> str:
    """An MMIE campaign of three interleaved answers with 1, 4 and 5 images (``mmie``)."""
    folder = data_folder(engine)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 30), (30, 200, 30)).save(folder / "images/green.png")
    with session_scope(engine) as session:
        dataset = Dataset(name="tiny-mmie", benchmark="mmie")
        session.add(dataset)
        session.flush()
        for index, images in enumerate((1, 4, 5)):
            item = Item(
                dataset_id=dataset.id,
                item_id=f"PBL-{index}",
                benchmark="mmie",
                category="PBL",
                history=[],
                question="Plan a garden, with pictures.",
                reference=None,
                meta={},
                content_sha256=_sha(f"mmie{index}"),
            )
            session.add(item)
            session.flush()
            answer: list[dict[str, str]] = []
            for step in range(images):
                answer += [
                    {"type": "text", "text": f"Step {step}."},
                    {"type": "image", "image": "images/green.png"},
                ]
            session.add(
                Response(
                    response_id=f"PBL-{index}/m",
                    item_pk=item.id,
                    model="m",
                    content=answer,
                    meta={},
                    content_sha256=_sha(f"a{index}"),
                )
            )
        create_campaign(session, CampaignSpec(name="mmie", dataset="tiny-mmie", protocol="mmie"))
    return "mmie"
