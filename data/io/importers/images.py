"""The images a dataset names: each distinct path checked once, missing ones counted.

An image segment names a file under the images root, or carries its bytes as a base64 ``data:``
URL (what the Hugging Face ``datasets`` and Parquet readers make of an ``Image`` value): those
bytes are checked like a file and staged in a private temporary folder until the import stores
them; the folder goes when the checker does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from data.io.importers.records import ItemPlan
from data.storage.content import (
    CheckedImage,
    ContentError,
    MissingImage,
    check_embedded_image,
    check_image,
    data_url_bytes,
)

EMBEDDED_SOURCE = "embedded image"
"""The ``source`` kept for an image that came as bytes with no file name."""


class ImageChecker:
    """Checks each distinct image path once; counts missing ones instead of failing at once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.accepted: dict[str, CheckedImage] = {}
        self.missing: dict[str, tuple[ItemPlan, str]] = {}
        self.missing_references = 0
        self._staging: tempfile.TemporaryDirectory[str] | None = None

    def stored_form(self, content: Any, field: str, plan: ItemPlan) -> Any:
        if not isinstance(content, list):
            return content
        return [self._segment(segment, f"{field}[{i}]", plan) for i, segment in enumerate(content)]

    def _segment(self, segment: dict[str, Any], field: str, plan: ItemPlan) -> dict[str, Any]:
        if segment.get("type") != "image" or not isinstance(segment.get("image"), str):
            return segment
        raw = segment["image"]
        embedded = raw.startswith("data:")
        source = segment.get("source", EMBEDDED_SOURCE if embedded else raw)
        if raw not in self.accepted and raw not in self.missing:
            try:
                self.accepted[raw] = (
                    self._embedded(raw, f"{field}.image")
                    if embedded
                    else check_image(raw, self.root, f"{field}.image")
                )
            except MissingImage:
                self.missing[raw] = (plan, f"{field}.image")
            except ContentError as error:
                raise plan.error(error.field, error.message) from None
        if raw in self.missing:
            self.missing_references += 1
            rest = {k: v for k, v in segment.items() if k not in ("image", "source")}
            return {**rest, "image": None, "source": source, "missing": True}
        return {**segment, "image": self.accepted[raw].store_path, "source": source}

    def _embedded(self, reference: str, field: str) -> CheckedImage:
        if self._staging is None:
            self._staging = tempfile.TemporaryDirectory(prefix="critiquelab-import-images-")
        return check_embedded_image(
            data_url_bytes(reference, field), Path(self._staging.name), field
        )
