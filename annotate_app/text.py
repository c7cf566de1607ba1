"""Show stored text (names, model output) literally where Streamlit would read Markdown."""

from __future__ import annotations

import re

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown and LaTeX delimiter backslash-escaped, so it shows as typed.

    Streamlit never renders raw HTML unless asked (we never ask); this also stops ``*``, ``_``,
    ``$`` or ``:emoji:`` shortcodes in a name from changing how it looks.
    """
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)
