"""Typed import errors: each names the file, the line (or entry), the field, and the fix.

A reader does not stop at the first bad line: it gathers the problems of a file in
:class:`Problems` (up to :data:`MAX_PROBLEMS`) and raises them together as :class:`InvalidFile`,
so a user fixes every line in one pass.
"""

from __future__ import annotations

from schemas.option_text import Message, OptionError, OptionNamer, OptionText, render_message

MAX_PROBLEMS = 50
"""Problems gathered before a reader stops: enough to fix a file in one pass, short to read."""


def _one_line(text: str) -> str:
    """One line of printable text: a lone surrogate (from a hostile file) is written escaped,
    since it cannot be encoded for the terminal or the page."""
    return " ".join(text.encode("utf-8", "backslashreplace").decode("utf-8").split())


class InvalidRecord(OptionError):
    """A record of an import file that cannot be accepted; nothing was written.

    ``str(error)`` is one line: ``FILE:LINE: what is wrong and what to do`` (``FILE: ...`` when
    the problem is the file as a whole, ``location`` None). A message that names an option of the
    import (an :class:`~schemas.option_text.OptionText`) is rendered by :meth:`render`.
    """

    def __init__(
        self, source: str, location: int | str | None, field: str | None, message: Message
    ) -> None:
        self.source = source
        self.location = location
        self.field = field
        self.text = message
        self.message = _one_line(str(message))
        self.where = source if location is None else f"{source}:{location}"
        super().__init__(f"{self.where}: {self.message}")

    def render(self, name_option: OptionNamer) -> str:
        """``FILE:LINE: message`` with the message's options named by ``name_option``."""
        return f"{self.where}: {_one_line(render_message(self.text, name_option))}"


class InvalidFile(InvalidRecord):
    """Every problem found in a file (at most :data:`MAX_PROBLEMS`); nothing was written.

    ``problems`` are the single-line errors in file order; ``str(error)`` is one problem per line,
    then a line saying that reading stopped when it did. The first problem's source, location and
    field are this error's own, so code that handles one :class:`InvalidRecord` still works.
    """

    def __init__(self, problems: list[InvalidRecord], *, stopped: bool = False) -> None:
        first = problems[0]
        self.problems = tuple(problems)
        self.stopped = stopped
        super().__init__(first.source, first.location, first.field, first.text)
        self.args = ("\n".join(self.lines()),)

    def lines(self, name_option: OptionNamer | None = None) -> list[str]:
        """One line per problem, and a last line when reading stopped at the limit; options
        named by ``name_option`` (default: the library's words)."""
        lines = [
            InvalidRecord.__str__(problem)
            if name_option is None
            else InvalidRecord.render(problem, name_option)
            for problem in self.problems
        ]
        if self.stopped:
            lines.append(
                f"{self.source}: stopped after {len(self.problems)} problems; fix these and "
                "check the file again"
            )
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def render(self, name_option: OptionNamer) -> str:
        """Every problem, one per line, with options named by ``name_option``."""
        return "\n".join(self.lines(name_option))


class Problems:
    """Collects the problems of one input; raises them as :class:`InvalidFile`.

    :meth:`add` raises at once when the limit is reached, so a file that is wrong on every line
    is not read to its end.
    """

    def __init__(self, limit: int = MAX_PROBLEMS) -> None:
        self.limit = limit
        self.found: list[InvalidRecord] = []

    def add(self, error: InvalidRecord) -> None:
        self.found.extend(error.problems if isinstance(error, InvalidFile) else (error,))
        if len(self.found) >= self.limit:
            raise InvalidFile(self.found[: self.limit], stopped=True)

    def __bool__(self) -> bool:
        return bool(self.found)

    def check(self) -> None:
        """Raise :class:`InvalidFile` if any problem was found."""
        if self.found:
            raise InvalidFile(self.found)


class MissingImages(InvalidRecord):
    """Image files named by the import file that do not exist (all of them counted)."""

    def __init__(
        self,
        source: str,
        location: int | str,
        field: str,
        count: int,
        files: int,
        root: str,
        example: str,
    ) -> None:
        self.count = count
        self.files = files
        self.root = root
        message = OptionText(
            "`{field}` {example} not found: {count:,} image reference(s) to {files:,} file(s) "
            "are missing; they were looked for under {root}. Give {images_root} where the images "
            "are, or import the text alone with {allow_missing_images}",
            field=field,
            example=example,
            count=count,
            files=files,
            root=root,
        )
        super().__init__(source, location, field, message)
