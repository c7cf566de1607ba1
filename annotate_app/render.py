"""Safe rendering of CONTENT (FORMATS.md): markdown without HTML, images, interleaved answers.

Nothing from the data may become markup. Text goes through :func:`annotate_app.text.safe_markdown`
(re-exported here): it keeps its paragraphs, lists, emphasis, code and tables, and every link,
image, autolink, HTML tag, math delimiter, directive and shortcode shows as the characters that
were typed, so model output cannot run a script or make the browser fetch anything. Image
segments are files under the data folder (:func:`data.storage.content.resolve_image`); a path
that leaves it is refused, never opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from annotate_app.text import escape_markdown, safe_markdown
from data.queue import ResponseView, UnitView
from data.storage.content import ContentError, resolve_image
from schemas.guidance import ALIGNMMBENCH_TASK_GUIDANCE, MMIE_CRITERIA, MMIE_JUDGE_MAX_IMAGES
from schemas.protocols import Protocol

# Less blank space above a page's title (Streamlit's default is 6rem), so that at 1280×720 a
# staff page's work (the unit and its form, the headline chart) starts on the first screen.
_COMPACT_TOP = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.75rem; }
</style>"""


def compact_page_top() -> None:
    """Draw the page with less space above its title (one rule for every page that wants it)."""
    st.html(_COMPACT_TOP)


def submit_row(label: str, *, primary: bool = False) -> tuple[bool, DeltaGenerator]:
    """A form's submit button and, on its row, the place for what the click did.

    Call inside ``st.form``; draw the outcome into the returned container after the form. Drawn
    under the form instead, the outcome falls below the viewport when the button was clicked on
    the viewport's lower edge, where a browser scrolls a button it brings into view.
    """
    button_column, outcome = st.columns([1, 3], vertical_alignment="center")
    with button_column:
        clicked = st.form_submit_button(label, type="primary" if primary else "secondary")
    return clicked, outcome.container()


@dataclass(frozen=True)
class Segment:
    """One piece of CONTENT: text, or an image with its resolved file (None if unusable)."""

    kind: Literal["text", "image"]
    text: str = ""
    image: str = ""
    path: Path | None = None
    problem: str = ""


def segments(content: Any) -> list[Segment]:
    """CONTENT as an ordered list of segments (a string is one text segment)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Segment("text", text=content)]
    result: list[Segment] = []
    for piece in content if isinstance(content, list) else [content]:
        if isinstance(piece, dict) and piece.get("type") == "image":
            result.append(_image_segment(piece))
        elif isinstance(piece, dict) and piece.get("type") == "text":
            result.append(Segment("text", text=str(piece.get("text", ""))))
        else:
            result.append(Segment("text", text=str(piece)))
    return result


def image_count(content: Any) -> int:
    return sum(1 for segment in segments(content) if segment.kind == "image")


def render_content(content: Any, *, side_by_side: bool = False) -> None:
    """Show CONTENT in order: text as safe Markdown, images inline (expandable to full screen).

    ``side_by_side``: a text followed by an image is shown as one row, the text beside its image
    (an interleaved answer's steps then take about half the height; read row by row, the order
    is the same)."""
    pieces = segments(content)
    index = 0
    while index < len(pieces):
        segment = pieces[index]
        following = pieces[index + 1] if index + 1 < len(pieces) else None
        beside = following is not None and following.kind == "image"
        if side_by_side and segment.kind == "text" and segment.text.strip() and beside:
            assert following is not None
            text, image = st.columns([3, 2], gap="small")
            with text:
                _render_segment(segment)
            with image:
                _render_segment(following)
            index += 2
            continue
        _render_segment(segment)
        index += 1


def _render_segment(segment: Segment) -> None:
    if segment.kind == "text":
        if segment.text.strip():
            st.markdown(safe_markdown(segment.text))
    elif segment.path is not None:
        st.image(str(segment.path), width="content")
    else:
        st.warning(escape_markdown(f"Image {segment.image} cannot be shown: {segment.problem}"))


def render_history(history: list[Any]) -> None:
    """Earlier dialogue turns, oldest first."""
    for turn in history:
        role = turn.get("role", "user") if isinstance(turn, dict) else "user"
        with st.chat_message("user" if role == "user" else "assistant"):
            render_content(turn.get("content") if isinstance(turn, dict) else turn)


def _image_segment(piece: dict[str, Any]) -> Segment:
    stored = piece.get("image")
    if not isinstance(stored, str):
        source = str(piece.get("source", ""))
        return Segment("image", image=source, problem="it was missing when the data was imported")
    try:
        path = resolve_image(stored)
    except ContentError as error:
        return Segment("image", image=stored, problem=str(error))
    if not path.is_file():
        return Segment("image", image=stored, problem="the file is missing")
    return Segment("image", image=stored, path=path)


def render_unit(view: UnitView) -> None:
    """The question and earlier turns, the response(s), then the reference (if the campaign
    shows it): the response comes right after the question so that it is on screen at once. A
    single response (and the question) shows each text beside the image that follows it; two
    responses stand side by side."""
    if view.history:
        st.markdown("**Earlier turns**")
        render_history(view.history)
    with st.container(key="cl-question", gap="small"):
        st.markdown("**Question**")
        render_content(view.question, side_by_side=True)
    if len(view.responses) == 1:
        st.markdown("**Response**")
        _render_response(view, view.responses[0], side_by_side=True)
    else:
        for column, response in zip(st.columns(len(view.responses)), view.responses, strict=True):
            with column, st.container(border=True):
                st.markdown(f"**Response {response.label}**")
                _render_response(view, response)
    if view.reference is not None:
        with st.expander("Reference answer", expanded=True):
            render_content(view.reference)


def render_bands(protocol: Protocol) -> None:
    """The scale's bands, each with its range (and percent on a percent scale) and description."""
    lines = []
    for band in protocol.bands:
        label = band.label()
        if protocol.percent:
            label += f" ({protocol.percent_label(band.low, band.high)})"
        lines.append(f"- **{label}**: {escape_markdown(band.description)}")
    st.markdown("\n".join(lines))


def render_rubric(view: UnitView, *, bands: bool = True, instructions: bool = True) -> None:
    """The scale with each band's description (``bands=False``: the answer panel shows them),
    what each pairwise choice means, the task guidance and the campaign's own notes
    (``instructions=False``: shown by the caller)."""
    protocol = view.protocol
    st.markdown(f"**{escape_markdown(protocol.title)}**")
    if protocol.bands and bands:
        render_bands(protocol)
    if protocol.choice_guide and bands:
        names = {"A": "A is better", "B": "B is better", "tie": "Tie"}
        st.markdown(
            "\n".join(
                f"- **{names.get(label, label)}**: {escape_markdown(text)}"
                for label, text in protocol.choice_guide
            )
        )
    for criterion in _criteria(view):
        st.caption(escape_markdown(criterion))
    guidance = ALIGNMMBENCH_TASK_GUIDANCE.get(view.task or "")
    if guidance and view.benchmark == "alignmmbench":
        st.info(f"**{escape_markdown(view.task or '')}**: {escape_markdown(guidance)}")
    if instructions and view.instructions.strip():
        with st.expander("Campaign instructions", expanded=True):
            st.markdown(safe_markdown(view.instructions))


def _criteria(view: UnitView) -> tuple[str, ...]:
    # MMIE's per-category criteria (with their one-point penalty) belong to its 0–6 score, not to
    # a pairwise or other campaign over MMIE items.
    if view.protocol.name == "mmie" and view.category in MMIE_CRITERIA:
        return MMIE_CRITERIA[view.category]
    return view.protocol.criteria


def _render_response(view: UnitView, response: ResponseView, *, side_by_side: bool = False) -> None:
    images = image_count(response.content)
    if view.benchmark == "mmie" and images > MMIE_JUDGE_MAX_IMAGES:
        st.caption(
            f"This answer has {images} images. The released MMIE judge sees only the first "
            f"{MMIE_JUDGE_MAX_IMAGES} (and the text before the cut); you see all of it."
        )
    render_content(response.content, side_by_side=side_by_side)
