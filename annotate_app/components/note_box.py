"""A note box for pages driven by one-key shortcuts (Disagreements, Adjudicate).

``st.text_area`` alone traps the keyboard: Esc does not leave it, so a shortcut key pressed
"after" the note is typed into the note, and Streamlit's hint under it ("Press Ctrl+Enter to
apply") names the key that submits an answer on the Annotate page. Here Esc leaves the box
(which sends its text, as any blur does), and the page's own hint replaces Streamlit's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

_DIR = Path(__file__).resolve().parent
_leave_on_escape = st.components.v2.component(
    "critiquelab_leave_on_escape",
    js=(_DIR / "leave_on_escape.js").read_text(encoding="utf-8"),
)


def note_box(
    label: str,
    *,
    key: str,
    hint: str,
    height: int = 80,
    on_change: Callable[..., None] | None = None,
    args: tuple[Any, ...] = (),
) -> str:
    """A text area whose text is committed and left with Esc, with ``hint`` under it instead of
    Streamlit's Ctrl+Enter line; ``on_change(*args)`` runs when its text reaches the server.
    Returns its text (as the server last received it)."""
    box = f"cl-note-{key}"
    css_class = "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", box.strip())  # as Streamlit makes it
    with st.container(key=box, gap="small"):
        hidden = f".{css_class} [data-testid='InputInstructions'] {{ display: none; }}"
        st.html(f"<style>{hidden}</style>")
        text = st.text_area(label, key=key, height=height, on_change=on_change, args=args)
        st.caption(hint)
        _leave_on_escape(key=f"{box}-escape", data={"selector": f".{css_class} textarea"})
    return text
