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


def interval_chart(
    rows: list[tuple[str, float, float | None, float | None, float | None]],
    *,
    title: str,
    axis_label: str,
    width: int = 640,
) -> str:
    """One line per row ``(name, value, low, high, ceiling)``: a dot at ``value``, a bar from
    ``low`` to ``high`` and a tick at ``ceiling``; missing parts are left out.

    The axis runs from min(0, every value) to 1 (correlations, accuracies)."""
    left, right, top, line = 150, 16, 30, 30
    height = top + line * len(rows) + 58
    values = [v for row in rows for v in row[1:] if v is not None and _finite(v)]
    low_end = min([0.0, *values])
    span = 1.0 - low_end or 1.0

    def x(value: float) -> float:
        return left + (value - low_end) / span * (width - left - right)

    parts = [_open(width, height, title), _text(4, 16, title, weight="bold")]
    bottom = top + line * len(rows)
    for i in range(11):
        tick = low_end + span * i / 10
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" y2="{bottom}" '
            'stroke="#eee" stroke-width="1"/>'
        )
        parts.append(_text(x(tick), bottom + 14, f"{tick:.2g}", anchor="middle", size=10))
    parts.append(
        _text((left + width - right) / 2, bottom + 30, axis_label, anchor="middle", size=11)
    )
    for i, (name, value, low, high, ceiling) in enumerate(rows):
        y = top + line * i + line / 2
        parts.append(_text(left - 6, y + 4, name, anchor="end", size=11))
        if low is not None and high is not None and _finite(low) and _finite(high):
            parts.append(
                f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{PALETTE[0]}" stroke-width="2"/>'
            )
        if _finite(value):
            parts.append(
                f'<circle cx="{x(value):.1f}" cy="{y:.1f}" r="5" fill="{PALETTE[0]}">'
                f"<title>{escape(name)}: {value:.3f}</title></circle>"
            )
        if ceiling is not None and _finite(ceiling):
            parts.append(
                f'<rect x="{x(ceiling) - 1.5:.1f}" y="{y - 9:.1f}" width="3" height="18" '
                f'fill="{PALETTE[2]}"><title>human ceiling: {ceiling:.3f}</title></rect>'
            )
    legend_y = height - 8
    parts.append(f'<circle cx="{left + 5}" cy="{legend_y - 4}" r="5" fill="{PALETTE[0]}"/>')
    parts.append(_text(left + 14, legend_y, "judge vs reference, 95% interval", size=10))
    parts.append(
        f'<rect x="{left + 230}" y="{legend_y - 12}" width="3" height="14" fill="{PALETTE[2]}"/>'
    )
    parts.append(_text(left + 238, legend_y, "human ceiling: one annotator vs the others", size=10))
    parts.append("</svg>")
    return "".join(parts)


def bubble_chart(
    points: list[tuple[float, float, int]],
    *,
    low: float,
    high: float,
    title: str,
    x_label: str,
    y_label: str,
    size: int = 300,
) -> str:
    """``(x, y, count)`` points on a square ``low``–``high`` plot, dot area ∝ count, with the
    dashed diagonal ``y = x``."""
    margin, top = 44, 26
    plot = size - margin - 10
    span = (high - low) or 1.0
    peak = max((count for _, _, count in points), default=1) or 1

    def px(value: float) -> float:
        return margin + (value - low) / span * plot

    def py(value: float) -> float:
        return top + plot - (value - low) / span * plot

    parts = [_open(size, size + top + 10, title), _text(4, 16, title, weight="bold")]
    parts.append(
        f'<rect x="{margin}" y="{top}" width="{plot}" height="{plot}" fill="none" stroke="#ccc"/>'
    )
    parts.append(
        f'<line x1="{px(low):.1f}" y1="{py(low):.1f}" x2="{px(high):.1f}" y2="{py(high):.1f}" '
        'stroke="#888" stroke-dasharray="4 4"/>'
    )
    for tick in (low, (low + high) / 2, high):
        parts.append(_text(px(tick), top + plot + 14, f"{tick:g}", anchor="middle", size=10))
        parts.append(_text(margin - 4, py(tick) + 4, f"{tick:g}", anchor="end", size=10))
    for x, y, count in points:
        radius = 2 + 9 * math.sqrt(count / peak)
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{radius:.1f}" fill="{PALETTE[0]}" '
            f'fill-opacity="0.7"><title>{x:g} → {y:g}: {count} units</title></circle>'
        )
    parts.append(_text(margin + plot / 2, top + plot + 30, x_label, anchor="middle", size=11))
    parts.append(
        f'<text x="12" y="{top + plot / 2:.1f}" font-size="11" text-anchor="middle" fill="#222" '
        f'transform="rotate(-90 12 {top + plot / 2:.1f})">{escape(y_label)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def horizontal_bars(
    categories: list[str], series: dict[str, list[float]], *, title: str, axis_label: str
) -> str:
    """One group of horizontal bars per category (in the given order), one colour per series;
    the axis runs from min(0, every value) to 1."""
    left, right, top, bar = 130, 16, 26, 9
    group = bar * len(series) + 8
    width = 640
    bottom = top + group * len(categories)
    height = bottom + 36 + 14 * len(series)
    values = [v for vs in series.values() for v in vs if _finite(v)]
    low_end = min([0.0, *values])
    span = 1.0 - low_end or 1.0

    def x(value: float) -> float:
        return left + (value - low_end) / span * (width - left - right)

    parts = [_open(width, height, title), _text(4, 16, title, weight="bold")]
    for i in range(11):
        tick = low_end + span * i / 10
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" y2="{bottom}" stroke="#eee"/>'
        )
        parts.append(_text(x(tick), bottom + 14, f"{tick:.2g}", anchor="middle", size=10))
    parts.append(
        _text((left + width - right) / 2, bottom + 28, axis_label, anchor="middle", size=11)
    )
    for i, category in enumerate(categories):
        y0 = top + group * i + 4
        parts.append(_text(left - 6, y0 + group / 2, category, anchor="end", size=10))
        for s, (name, values) in enumerate(series.items()):
            value = values[i]
            if not _finite(value):
                continue
            start, end = sorted((x(0.0), x(value)))
            parts.append(
                f'<rect x="{start:.1f}" y="{y0 + s * bar:.1f}" width="{max(end - start, 0.5):.1f}" '
                f'height="{bar - 1}" fill="{PALETTE[s % len(PALETTE)]}">'
                f"<title>{escape(name)} · {escape(category)}: {value:.3f}</title></rect>"
            )
    for s, name in enumerate(series):
        y = bottom + 40 + 14 * s
        parts.append(
            f'<rect x="{left}" y="{y - 9}" width="10" height="10" '
            f'fill="{PALETTE[s % len(PALETTE)]}"/>'
        )
        parts.append(_text(left + 14, y, name, size=10))
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
