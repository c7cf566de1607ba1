"""Typed import errors: each names the file, the line (or entry), the field, and the fix."""

from __future__ import annotations


class InvalidRecord(ValueError):
    """A record of an import file that cannot be accepted; nothing was written.

    ``str(error)`` is one line: ``FILE:LINE: what is wrong and what to do``.
    """

    def __init__(self, source: str, location: int | str, field: str | None, message: str) -> None:
        self.source = source
        self.location = location
        self.field = field
        self.message = message
        super().__init__(f"{source}:{location}: {message}")


class MissingImages(InvalidRecord):
    """Image files named by the import file that do not exist (all of them counted)."""

    def __init__(
        self, source: str, location: int | str, field: str, count: int, files: int, root: str,
        example: str,
    ) -> None:  # fmt: skip
        self.count = count
        self.files = files
        self.root = root
        message = (
            f"`{field}` {example} not found: {count:,} image reference(s) to {files:,} file(s) "
            f"are missing; they were looked for under {root}. Pass --images-root DIR where the "
            "images are, or import the text alone with --allow-missing-images"
        )
        super().__init__(source, location, field, message)
