"""The answer panel: a Custom Component v2 (inline, no iframe) for scoring and explaining.

The browser side (``answer_box.js``) shows the protocol's choices as buttons, the rationale box
and the submit button. It reports the draft as the annotator types (debounced) as the ``draft``
state, and a submit (button or Ctrl+Enter) as the ``submit`` trigger, each a
:class:`AnswerPayload`. Keyboard: digits choose a score (0 = 10 on 1–10), a / b / t a
preference, when focus is not in a text field; choosing returns focus to the rationale.
It also counts active seconds: the page visible and focused, idle time beyond 2 minutes not
counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from data.queue import DraftView
from schemas.protocols import Protocol

_DIR = Path(__file__).resolve().parent
_component = st.components.v2.component(
    "critiquelab_answer_box",
    js=(_DIR / "answer_box.js").read_text(encoding="utf-8"),
    css=(_DIR / "answer_box.css").read_text(encoding="utf-8"),
)
MAX_BUTTONS = 21
"""Scales with more points than this (or continuous ones) are typed into a number box."""


@dataclass(frozen=True)
class AnswerPayload:
    """What the panel sends: the answer as shown (preference in shown order) and active time."""

    unit: int
    score: float | None
    preference: str | None
    rationale: str
    seconds: float


def choices_for(protocol: Protocol) -> list[dict[str, Any]]:
    """Buttons for the protocol: value, label, keyboard key, band hint, one-line description."""
    if not protocol.is_pointwise:
        names = {"A": "A is better", "B": "B is better", "tie": "Tie"}
        keys = {"A": "a", "B": "b", "tie": "t"}
        return [
            {"value": label, "label": names[label], "key": keys[label], "hint": "",
             "describe": f"You chose: {names[label]}"}
            for label in protocol.labels
        ]  # fmt: skip
    if not protocol.is_discrete or len(protocol.scale_points()) > MAX_BUTTONS:
        return []
    points = protocol.scale_points()
    choices = []
    for value in points:
        band = protocol.band_for(value)
        percent = f" ({protocol.percent_of(value):.0f}%)" if protocol.percent else ""
        label = _number(value) + percent
        describe = f"Score {label}" + (f" — {band.description}" if band else "")
        choices.append(
            {"value": value, "label": label, "key": _digit_key(value, points),
             "hint": band.description if band else "", "describe": describe}
        )  # fmt: skip
    return choices


def panel_data(
    *,
    unit: int,
    protocol: Protocol,
    rationale_min: int,
    draft: DraftView | None,
    attempt: int = 0,
    error: str | None = None,
    submit_label: str = "Submit",
) -> dict[str, Any]:
    """What the browser side receives: choices, limits, the restored draft, texts."""
    choices = choices_for(protocol)
    numeric = None
    if protocol.is_pointwise and not choices:
        numeric = {"min": protocol.scale_min, "max": protocol.scale_max, "step": protocol.step}
    pairwise = not protocol.is_pointwise
    restored = None
    if draft is not None:
        restored = {
            "score": draft.score,
            "preference": draft.preference,
            "rationale": draft.rationale,
            "seconds": draft.active_seconds,
        }
    return {
        "unit": unit,
        "kind": "pairwise" if pairwise else "pointwise",
        "choices": choices,
        "numeric": numeric,
        "rationale_min": rationale_min,
        "draft": restored,
        "attempt": attempt,
        "error": error,
        "submit_label": submit_label,
        "choice_label": "Preference" if pairwise else f"Score ({protocol.describe_scale()})",
        "choose_prompt": "Choose A, B or tie." if pairwise else "Choose a score.",
        "placeholder": "Why? Say what is right or wrong in the answer"
        + (" and why one is better." if pairwise else "."),
        "help": _help_text(pairwise, bool(choices)),
    }


def answer_box(
    *,
    key: str,
    on_draft: Callable[[], None],
    on_submit: Callable[[], None],
    **settings: Any,
) -> None:
    """Mount the panel (``settings`` as for :func:`panel_data`); the callbacks run on reports."""
    _component(
        key=key,
        data=panel_data(**settings),
        on_draft_change=on_draft,
        on_submit_change=on_submit,
        height="content",
    )


def read_payload(key: str, event: str) -> AnswerPayload | None:
    """The ``draft`` or ``submit`` value the panel under ``key`` sent, checked; None if absent."""
    state = st.session_state.get(key)
    value = state.get(event) if isinstance(state, dict) else None
    if not isinstance(value, dict):
        return None
    try:
        return AnswerPayload(
            unit=int(value["unit"]),
            score=None if value.get("score") is None else float(value["score"]),
            preference=None if value.get("preference") is None else str(value["preference"]),
            rationale=str(value.get("rationale") or ""),
            seconds=_finite(value.get("seconds")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _finite(value: object) -> float:
    number = float(value) if isinstance(value, int | float) else 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _digit_key(value: float, points: list[float]) -> str | None:
    if not float(value).is_integer():
        return None
    if 0 <= value <= 9:
        return str(int(value))
    if value == 10 and 0 not in points:
        return "0"
    return None


def _help_text(pairwise: bool, keyed: bool) -> str:
    keys = "a / b / t choose" if pairwise else ("digits choose a score (0 = 10)" if keyed else "")
    parts = [f"Keys: {keys} when you are not typing" if keys else "Keys:"]
    parts.append("Esc leaves the text box · Ctrl+Enter submits from anywhere")
    return "; ".join(parts) if keys else "Ctrl+Enter submits from anywhere"
