"""The images a dataset names: each distinct path checked once, missing ones counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from data.io.content import CheckedImage, ContentError, MissingImage, check_image
from data.io.importers.records import ItemPlan


class ImageChecker:
    """Checks each distinct image path once; counts missing ones instead of failing at once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.accepted: dict[str, CheckedImage] = {}
        self.missing: dict[str, tuple[ItemPlan, str]] = {}
        self.missing_references = 0

    def stored_form(self, content: Any, field: str, plan: ItemPlan) -> Any:
        if not isinstance(content, list):
            return content
        return [self._segment(segment, f"{field}[{i}]", plan) for i, segment in enumerate(content)]

    def _segment(self, segment: dict[str, Any], field: str, plan: ItemPlan) -> dict[str, Any]:
        if segment.get("type") != "image" or not isinstance(segment.get("image"), str):
            return segment
        raw = segment["image"]
        source = segment.get("source", raw)
        if raw not in self.accepted and raw not in self.missing:
            try:
                self.accepted[raw] = check_image(raw, self.root, f"{field}.image")
            except MissingImage:
                self.missing[raw] = (plan, f"{field}.image")
            except ContentError as error:
                raise plan.error(error.field, error.message) from None
        if raw in self.missing:
            self.missing_references += 1
            rest = {k: v for k, v in segment.items() if k not in ("image", "source")}
            return {**rest, "image": None, "source": source, "missing": True}
        return {**segment, "image": self.accepted[raw].store_path, "source": source}
