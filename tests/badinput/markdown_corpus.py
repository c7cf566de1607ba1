"""The hostile Markdown corpus: ``tests/badinput/markdown/*.md``, one way per file to make
Streamlit's browser-side Markdown fetch, link, run or typeset something.

Every URL in the corpus points at the host ``TRAP``; a test replaces it with the address of a
server it watches (the browser test) or with any address (the parser tests). Files are read as
bytes, so CRLF, lone CR and U+2028 line breaks reach the code under test as written.
"""

from __future__ import annotations

import re
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "markdown"
TRAP = "TRAP"
_TRAP_PATH = re.compile(r"TRAP/([A-Za-z0-9.-]+(?:\([0-9]\)[A-Za-z0-9.]*)?)")


def markdown_corpus(target: str) -> dict[str, str]:
    """Every corpus file by name (without ``.md``), with ``TRAP`` replaced by ``target``."""
    return {
        path.stem: path.read_bytes().decode("utf-8").replace(TRAP, target)
        for path in sorted(CORPUS_DIR.glob("*.md"))
    }


def trap_paths(text: str, target: str) -> list[str]:
    """The paths of the trap URLs in one corpus text (so a test can find them shown as text)."""
    return _TRAP_PATH.findall(text.replace(target, TRAP))
