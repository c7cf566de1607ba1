"""The HTML report's "Why judges disagree" section, from :func:`summarise_tags`.

Every piece of data text (judge and cause names, notes, unit keys) goes through
:func:`html.escape`, so it is shown, never interpreted.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from calibration.disagreement_tags import JudgeTags


def tags_section(summaries: Sequence[JudgeTags]) -> str:
    """One table per judge (cause, count, share with its interval) and two examples per cause;
    an empty string when nothing is tagged."""
    if not summaries:
        return ""
    parts = [
        "<h2>Why judges disagree with the humans</h2>",
        "<p class='note'>Reviewers' causes for the units where a judge and the reference differ "
        "by at least the campaign's threshold (pairwise: disagree), live tags only. Share of "
        "the judge's tagged units with a Wilson score interval (METRICS.md "
        "&ldquo;Disagreement causes&rdquo;).</p>",
    ]
    for summary in summaries:
        level = f"{summary.confidence:.0%}"
        parts.append(f"<h3>{escape(summary.judge)} &middot; {summary.tagged} tagged</h3>")
        rows = "".join(
            f"<tr><td class='text'>{escape(c.cause)}</td><td>{c.count}</td>"
            f"<td>{100 * c.share:.1f}% <span class='ci'>[{100 * c.low:.1f}, "
            f"{100 * c.high:.1f}]</span></td><td class='text'>{_examples(c.examples)}</td></tr>"
            for c in summary.causes
        )
        parts.append(
            "<table><tr><th class='text'>cause</th><th>tagged</th>"
            f"<th>share [{level} interval]</th><th class='text'>examples</th></tr>"
            f"{rows}</table>"
        )
    return "<section>" + "".join(parts) + "</section>"


def _examples(tags: Sequence) -> str:
    return "<br>".join(
        f"{escape(t.unit_key)}: judge {escape(t.judge_value)}, reference "
        f"{escape(t.reference_value)}" + (f" &mdash; {escape(t.note)}" if t.note else "")
        for t in tags
    )
