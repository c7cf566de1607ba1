"""A campaign out as Label Studio tasks (FORMATS.md §7), annotations optional.

One task per unit (gold units left out), in Label Studio's import format: a JSON list of
``{"data": {...}, "annotations": [...]}``. The ``data`` fields are the ones the labelling configs
of ``docs/label-studio/`` name: ``question`` and ``context`` (the item's text and earlier turns),
``images`` (every image of the item and its responses), ``protocol``, ``item_id``, and
``response_id`` / ``model`` / ``response`` (pointwise) or ``pair_a`` / ``pair_b`` /
``response_a`` / ``response_b`` (pairwise, in canonical order; ``A`` and ``B`` are these).

Images are written as paths (the stored files copied beside the output under their store path,
``images/ab/<sha256>.<ext>``, each prefixed by ``image_prefix``: Label Studio's local-files
storage serves ``/data/local-files/?d=PATH``) or inlined as ``data:`` URLs. With annotations, each
live, not rejected annotation becomes one with ``completed_by`` ``{"email": "<name>@<domain>"}``,
the ``preference`` / ``score`` / ``rationale`` results, ``lead_time`` (seconds) and
``created_at``; :func:`data.io.importers.label_studio.read_label_studio` reads them back.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlmodel import Session, col, select

from data.io.exporters.datasets import copy_images
from data.io.exporters.files import atomic_write
from data.io.exporters.records import annotation_records
from data.io.importers.label_studio import LabelStudioFields
from data.storage.campaign_lookup import get_campaign
from data.storage.content import iter_images, resolve_image
from data.storage.engine import engine_data_dir
from schemas.core import stored_id
from schemas.records import JudgementRecord
from schemas.tables import Item, Pair, Response, Unit

ImageMode = Literal["paths", "data"]
ANNOTATOR_DOMAIN = "critiquelab.invalid"
"""The domain of the e-mail an exported annotator gets (``.invalid``: never a real address)."""


@dataclass(frozen=True)
class LabelStudioExport:
    """What ``export label-studio`` wrote."""

    campaign: str
    tasks: int
    annotations: int
    images: int
    output: str


def export_label_studio(
    session: Session,
    campaign_name: str,
    output: Path,
    *,
    with_annotations: bool = False,
    images: ImageMode = "paths",
    image_prefix: str = "",
) -> LabelStudioExport:
    """Write the units of ``campaign_name`` as Label Studio tasks to ``output`` (JSON)."""
    campaign = get_campaign(session, campaign_name)
    units = list(
        session.exec(
            select(Unit)
            .where(Unit.campaign_id == campaign.id, col(Unit.gold).is_(False))
            .order_by(col(Unit.id))
        )
    )
    items = _by_pk(session, Item, {u.item_pk for u in units})
    pairs = _by_pk(session, Pair, {u.pair_pk for u in units if u.pair_pk is not None})
    response_pks = {u.response_pk for u in units if u.response_pk is not None}
    response_pks |= {pk for p in pairs.values() for pk in (p.response_a_pk, p.response_b_pk)}
    responses = _by_pk(session, Response, response_pks)
    labels = _labels(session, campaign.name) if with_annotations else {}
    data_root = engine_data_dir(session.get_bind().engine)
    copied: set[str] = set()
    tasks = []
    written = 0
    for unit in units:
        item = items[unit.item_pk]
        shown: list[Response]
        if unit.response_pk is not None:
            shown = [responses[unit.response_pk]]
        else:
            pair = pairs[unit.pair_pk]  # type: ignore[index]  # a unit has one or the other
            shown = [responses[pair.response_a_pk], responses[pair.response_b_pk]]
        stored = list(
            dict.fromkeys(
                path
                for content in (item.question, *(t["content"] for t in item.history or []))
                + tuple(r.content for r in shown)
                for path in iter_images(content)
            )
        )
        copied |= set(stored) if images == "paths" else set()
        data = _data(item, shown, campaign.protocol)
        data["images"] = [
            image_prefix + path if images == "paths" else _data_url(path, data_root)
            for path in stored
        ]
        task: dict[str, Any] = {"data": data}
        if with_annotations:
            key = tuple(r.response_id for r in shown)
            task["annotations"] = [_annotation(record) for record in labels.get(key, [])]
            written += len(task["annotations"])
        tasks.append(task)

    def write(temporary: Path) -> None:
        with temporary.open("w", encoding="utf-8") as out:
            json.dump(tasks, out, ensure_ascii=False, indent=1)
        # the images before the file is in place: a missing one leaves no file that names it
        copy_images(copied, data_root, output.parent)

    atomic_write(output, write)
    return LabelStudioExport(
        campaign=campaign.name,
        tasks=len(tasks),
        annotations=written,
        images=len({p for t in tasks for p in t["data"]["images"]}),
        output=str(output),
    )


def _by_pk(session: Session, table: Any, pks: set[int]) -> dict[int, Any]:
    found: dict[int, Any] = {}
    ordered = sorted(pks)
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        for row in session.exec(select(table).where(col(table.id).in_(chunk))):
            found[stored_id(row)] = row
    return found


def _labels(session: Session, campaign: str) -> dict[tuple[str, ...], list[JudgementRecord]]:
    """The campaign's exported annotations by unit: ``(response_id,)`` or the canonical pair."""
    by_unit: dict[tuple[str, ...], list[JudgementRecord]] = defaultdict(list)
    for record in annotation_records(session, campaign):
        key = tuple(record.pair) if record.pair is not None else (str(record.response_id),)
        by_unit[key].append(record)
    return by_unit


def _data(item: Item, shown: list[Response], protocol: str) -> dict[str, Any]:
    context = "\n\n".join(
        f"{turn.get('role', 'turn')}: {_text(turn['content'])}" for turn in item.history or []
    )
    data: dict[str, Any] = {
        "item_id": item.item_id,
        "protocol": protocol,
        "question": _text(item.question),
        "context": context,
    }
    if len(shown) == 1:
        response = shown[0]
        data |= {
            "response_id": response.response_id,
            "model": response.model,
            "response": _text(response.content),
        }
    else:
        a, b = shown
        data |= {
            "pair_a": a.response_id,
            "pair_b": b.response_id,
            "response_a": _text(a.content),
            "response_b": _text(b.content),
        }
    return data


def _text(content: Any) -> str:
    """The text of a piece of content; images are in ``data.images``, marked here in place."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for segment in content:
        if segment.get("type") == "text":
            parts.append(segment.get("text", ""))
        elif segment.get("type") == "image":
            parts.append("[image]")
    return "\n\n".join(parts)


def _data_url(stored_path: str, data_root: Path) -> str:
    path = resolve_image(stored_path, data_root)
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _annotation(record: JudgementRecord) -> dict[str, Any]:
    fields = LabelStudioFields()
    to_name = "question"
    result: list[dict[str, Any]] = []
    if record.preference is not None:
        result.append(
            {
                "from_name": fields.preference,
                "to_name": to_name,
                "type": "choices",
                "value": {"choices": [record.preference]},
            }
        )
    if record.score is not None:
        result.append(
            {
                "from_name": fields.score,
                "to_name": to_name,
                "type": "number",
                "value": {"number": record.score},
            }
        )
    result.append(
        {
            "from_name": fields.rationale,
            "to_name": to_name,
            "type": "textarea",
            "value": {"text": [record.rationale]},
        }
    )
    annotation: dict[str, Any] = {
        "completed_by": {"email": f"{record.annotator}@{ANNOTATOR_DOMAIN}"},
        "result": result,
        "was_cancelled": False,
        "lead_time": record.seconds,
    }
    if record.created_at is not None:
        annotation["created_at"] = record.created_at.isoformat()
    return annotation
