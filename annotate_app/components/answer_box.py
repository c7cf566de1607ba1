"""The answer panel: a Custom Component v2 (inline, no iframe) for scoring and explaining.

The browser side (``answer_box.js``) shows the protocol's choices as buttons with what each band
(or, pairwise, each choice) means under them, the rationale box and the submit button. It reports
the draft as the annotator types (debounced) as the ``draft`` state, and a submit (button or
Ctrl+Enter) as the ``submit`` trigger, each a :class:`AnswerPayload`. Keys are the protocol's
(:meth:`schemas.protocols.Protocol.choice_key`), when focus is not in a text field; choosing
returns focus to the rationale; ``?`` lists every shortcut. It also counts active seconds: the
page visible and focused, idle time beyond 2 minutes not counted.

With a ``store`` key, every change is also written at once to the browser's ``localStorage``
under that key, so a refresh or a crash loses no keystroke; on load the browser copy and the
server draft are compared by when each was typed (server clock) and the newer one wins. After a
submit the panel shows only "Saving…" (the answer sent is neither shown nor clickable) until the
page replaces it with the next unit's; a panel still on screen when the next unit's arrives is
hidden. Each rerun calls the browser side again: it keeps one set of listeners per panel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine

from data import queue
from data.queue import DraftView
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.protocols import MAX_CHOICES, Protocol

_DIR = Path(__file__).resolve().parent
_component = st.components.v2.component(
    "critiquelab_answer_box",
    js=(_DIR / "answer_box.js").read_text(encoding="utf-8"),
    css=(_DIR / "answer_box.css").read_text(encoding="utf-8"),
)
MAX_BUTTONS = MAX_CHOICES
"""Scales with more points than this (or continuous ones) are typed into a number box."""
STORE_PREFIX = "critiquelab-draft"
_PAIRWISE_NAMES = {"A": "A is better", "B": "B is better", "tie": "Tie"}


@dataclass(frozen=True)
class AnswerPayload:
    """What the panel sends: the answer as shown (preference in shown order), active time, and
    when the answer was last changed (UTC; None if the browser did not say)."""

    unit: int
    score: float | None
    preference: str | None
    rationale: str
    seconds: float
    edited_at: datetime | None = None


@dataclass(frozen=True)
class SavedRevision:
    """An answer's new revision, saved from the panel."""

    annotation_id: int
    revision: int


def save_revision(
    engine: Engine, key: str, annotation_id: int, user_id: int
) -> SavedRevision | None:
    """Save what the panel ``key`` submitted for the answer ``annotation_id`` as its next revision
    (:func:`data.queue.revise`: audited, the earlier one kept), for Annotate's Undo / Previous and
    *My work* alike; None when the panel sent nothing for that answer. Raises
    :class:`data.queue.QueueError` or :class:`data.storage.engine.DatabaseProblem`."""
    payload = read_payload(key, "submit")
    if payload is None or payload.unit != annotation_id:
        return None
    with session_scope(engine) as session:
        new = queue.revise(
            session,
            annotation_id,
            user_id,
            score=payload.score,
            preference=payload.preference,
            rationale=payload.rationale,
            extra_seconds=payload.seconds,
        )
        return SavedRevision(stored_id(new), new.revision)


def store_key(user_id: int, campaign_id: int, unit: int) -> str:
    """The ``localStorage`` key of one annotator's draft of one unit of one campaign."""
    return f"{STORE_PREFIX}:{user_id}:{campaign_id}:{unit}"


def choices_for(protocol: Protocol) -> list[dict[str, Any]]:
    """Buttons for the protocol: value, label, keyboard key, band hint, one-line description."""
    if not protocol.is_pointwise:
        return [
            {
                "value": label,
                "label": _PAIRWISE_NAMES[label],
                "key": protocol.choice_key(label),
                "hint": "",
                "describe": f"You chose: {_PAIRWISE_NAMES[label]}",
            }
            for label in protocol.labels
        ]
    choices = []
    for value in protocol.choices():
        band = protocol.band_for(float(value))
        label = protocol.score_label(float(value))
        describe = f"Score {label}" + (f" — {band.description}" if band else "")
        choices.append(
            {
                "value": value,
                "label": label,
                "key": protocol.choice_key(value),
                "hint": band.description if band else "",
                "describe": describe,
            }
        )
    return choices


def guide_for(protocol: Protocol) -> list[dict[str, Any]]:
    """What each band of the scale (or each pairwise choice) means, shown under the buttons."""
    if not protocol.is_pointwise:
        guide = dict(protocol.choice_guide)
        return [
            {"label": _PAIRWISE_NAMES[label], "text": guide[label], "values": [label]}
            for label in protocol.labels
            if label in guide
        ]
    rows = []
    for band in protocol.bands:
        label = band.label()
        if protocol.percent:
            label += f" ({protocol.percent_label(band.low, band.high)})"
        values = [v for v in protocol.choices() if protocol.band_for(float(v)) == band]
        rows.append({"label": label, "text": band.description, "values": values})
    return rows


def shortcuts_for(protocol: Protocol) -> list[list[str]]:
    """Every keyboard shortcut of the panel as (keys, what they do), for the ``?`` sheet."""
    rows = [
        [choice["key"], choice["describe"].removeprefix("You chose: ")]
        for choice in choices_for(protocol)
        if choice["key"]
    ]
    rows += [
        ["Ctrl+Enter", "Submit, from anywhere on the page (⌘+Enter on a Mac)"],
        ["Esc", "Leave the text box, so that keys choose again"],
        ["?", "Show or hide this list"],
    ]
    return rows


def panel_data(
    *,
    unit: int,
    protocol: Protocol,
    rationale_min: int,
    draft: DraftView | None,
    attempt: int = 0,
    error: str | None = None,
    submit_label: str = "Submit",
    store: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """What the browser side receives: choices, limits, the restored draft, texts.

    ``store``: the ``localStorage`` key of the browser copy (see :func:`store_key`); None keeps
    none. ``now``: the server's time, from which the browser learns its clock's offset.
    """
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
            "saved_at": None if draft.updated_at is None else _epoch_ms(draft.updated_at),
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
        "help": _help_text(protocol),
        "guide": guide_for(protocol),
        "shortcuts": shortcuts_for(protocol),
        "store": store,
        "store_scope": None if store is None else store.rsplit(":", 1)[0] + ":",
        "server_now": _epoch_ms(now or datetime.now(UTC)),
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
        data={**panel_data(**settings), "panel": key},  # the browser side's id of this panel
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
            edited_at=_edited_at(value.get("edited_at")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _edited_at(value: object) -> datetime | None:
    """The browser's epoch milliseconds (server clock) as UTC; None when absent or not a time."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _epoch_ms(moment: datetime) -> int:
    if moment.tzinfo is None:  # SQLite hands back naive datetimes; they are stored as UTC
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


def _finite(value: object) -> float:
    number = float(value) if isinstance(value, int | float) else 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


def _help_text(protocol: Protocol) -> str:
    hint = protocol.key_hint()
    keys = f"Keys when you are not typing: {hint}; " if hint else ""
    return keys + "Ctrl+Enter submits from anywhere · Esc leaves the text box · ? lists all keys"
