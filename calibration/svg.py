"""Small inline SVG charts for the audit report (no script, no external resource).

Every label passes through :func:`html.escape`; numbers are formatted here.
"""

from __future__ import annotations

import math
from html import escape

PALETTE: tuple[str, ...] = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7")


def bar_chart(
    categories: list[str],
    series: dict[str, list[float]],
    *,
    title: str,
    width: int = 640,
    height: int = 240,
    symmetric: bool = False,
) -> str:
    """Grouped vertical bars, one group per category, one colour per series.

    ``symmetric``: the y axis runs from -max to +max (for signed values such as a bias).
    """
    left, right, top, bottom = 48, 12, 28, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    finite = [abs(v) for values in series.values() for v in values if _finite(v)]
    peak = max(finite, default=1.0) or 1.0
    low = -peak if symmetric else 0.0
    scale = plot_h / (peak - low)

    def y(value: float) -> float:
        return top + (peak - value) * scale

    parts = [_open(width, height, title), _text(left, 16, title, weight="bold")]
    zero = y(0.0)
    parts.append(
        f'<line x1="{left}" x2="{width - right}" y1="{zero:.1f}" y2="{zero:.1f}" '
        'stroke="#888" stroke-width="1"/>'
    )
    for tick in (low, (low + peak) / 2, peak):
        parts.append(_text(left - 4, y(tick) + 4, f"{tick:.3g}", anchor="end", size=10))
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    for i, category in enumerate(categories):
        x0 = left + i * group_w + group_w * 0.1
        for s, (name, values) in enumerate(series.items()):
            value = values[i]
            if not _finite(value):
                continue
            top_y, bottom_y = sorted((y(value), zero))
            parts.append(
                f'<rect x="{x0 + s * bar_w:.1f}" y="{top_y:.1f}" width="{bar_w:.1f}" '
                f'height="{max(bottom_y - top_y, 0.5):.1f}" fill="{PALETTE[s % len(PALETTE)]}">'
                f"<title>{escape(name)} · {escape(category)}: {value:.4g}</title></rect>"
            )
        parts.append(
            _text(x0 + group_w * 0.4, height - bottom + 14, category, anchor="middle", size=10)
        )
    parts.append(_legend(list(series), width - right, top))
    parts.append("</svg>")
    return "".join(parts)


def heatmap(
    rows: list[str],
    columns: list[str],
    counts: list[list[float]],
    *,
    title: str,
    row_label: str,
    column_label: str,
) -> str:
    """A count table as shaded cells with the count written in each (confusion matrices)."""
    cell = 30 if len(columns) <= 12 else 20
    left, top = 90, 46
    width, height = left + cell * len(columns) + 20, top + cell * len(rows) + 30
    peak = max((v for row in counts for v in row), default=1) or 1
    parts = [_open(width, height, title), _text(4, 16, title, weight="bold")]
    parts.append(_text(left + cell * len(columns) / 2, 34, column_label, anchor="middle", size=11))
    for j, name in enumerate(columns):
        parts.append(_text(left + j * cell + cell / 2, top - 2, name, anchor="middle", size=9))
    for i, name in enumerate(rows):
        parts.append(_text(left - 4, top + i * cell + cell / 2 + 4, name, anchor="end", size=9))
        for j, value in enumerate(counts[i]):
            shade = 0.08 + 0.92 * (value / peak) if value else 0.0
            parts.append(
                f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
                f'fill="#4269d0" fill-opacity="{shade:.3f}" stroke="#ddd">'
                f"<title>{escape(name)} → {escape(columns[j])}: {value:g}</title></rect>"
            )
            if value:
                colour = "#fff" if shade > 0.55 else "#222"
                parts.append(
                    _text(
                        left + j * cell + cell / 2,
                        top + i * cell + cell / 2 + 4,
                        f"{value:g}",
                        anchor="middle",
                        size=9,
                        fill=colour,
                    )
                )
    parts.append(_text(8, top + cell * len(rows) + 18, f"rows: {row_label}", size=10))
    parts.append("</svg>")
    return "".join(parts)


def _open(width: int, height: int, title: str) -> str:
    return (
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        'font-family="sans-serif">'
    )


def _legend(names: list[str], x_right: float, y_top: float) -> str:
    parts = []
    for s, name in enumerate(names):
        y = y_top + s * 14
        parts.append(
            f'<rect x="{x_right - 120}" y="{y - 8}" width="10" height="10" '
            f'fill="{PALETTE[s % len(PALETTE)]}"/>'
        )
        parts.append(_text(x_right - 106, y + 1, name, size=10))
    return "".join(parts)


def _text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    size: int = 12,
    weight: str = "normal",
    fill: str = "#222",
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
        f'font-weight="{weight}" fill="{fill}">{escape(str(text))}</text>'
    )


def _finite(value: float) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))
