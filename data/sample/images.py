"""Pictures for the sample project, drawn with Pillow: charts, counting scenes, shapes, text cards,
memes as diagrams, and the step panels of interleaved answers.

Every function is deterministic (no clock, no unseeded randomness) and uses Pillow's bundled
font, so the same call gives the same pixels on every machine with the same Pillow. Text drawn
into images is ASCII: the bundled font has no CJK glyphs.
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 480, 320
BACKGROUND = (250, 248, 242)
INK = (40, 40, 48)
PALETTE = {
    "red": (214, 69, 65),
    "blue": (52, 110, 200),
    "green": (67, 160, 71),
    "yellow": (240, 190, 40),
    "purple": (136, 84, 208),
    "orange": (245, 130, 40),
    "grey": (150, 150, 150),
    "brown": (140, 90, 50),
}


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _canvas(title: str | None = None) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    if title:
        draw.text((WIDTH // 2, 16), title, fill=INK, font=_font(18), anchor="mt")
    return image, draw


def png_bytes(image: Image.Image) -> bytes:
    """The image as PNG bytes (no metadata, so identical pixels give identical bytes)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def bar_chart(
    title: str, labels: Sequence[str], values: Sequence[float], unit: str = ""
) -> Image.Image:
    """Vertical bars with their values written on top."""
    image, draw = _canvas(title)
    left, right, top, bottom = 50, WIDTH - 20, 50, HEIGHT - 40
    draw.line((left, top, left, bottom), fill=INK, width=2)
    draw.line((left, bottom, right, bottom), fill=INK, width=2)
    peak = max(values) * 1.15
    slot = (right - left) / len(values)
    colors = list(PALETTE.values())
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        x0 = left + slot * index + slot * 0.2
        x1 = left + slot * (index + 1) - slot * 0.2
        y0 = bottom - (bottom - top) * value / peak
        draw.rectangle((x0, y0, x1, bottom), fill=colors[index % len(colors)])
        draw.text(
            ((x0 + x1) / 2, y0 - 4), f"{value:g}{unit}", fill=INK, font=_font(13), anchor="mb"
        )
        draw.text(((x0 + x1) / 2, bottom + 6), label, fill=INK, font=_font(13), anchor="mt")
    return image


def line_chart(title: str, labels: Sequence[str], values: Sequence[float]) -> Image.Image:
    """A line with dots and value labels over evenly spaced categories."""
    image, draw = _canvas(title)
    left, right, top, bottom = 50, WIDTH - 30, 55, HEIGHT - 40
    draw.line((left, top, left, bottom), fill=INK, width=2)
    draw.line((left, bottom, right, bottom), fill=INK, width=2)
    low, high = min(values) * 0.8, max(values) * 1.1
    step = (right - left) / (len(values) - 1)
    points = [
        (left + step * i, bottom - (bottom - top) * (v - low) / (high - low))
        for i, v in enumerate(values)
    ]
    draw.line(points, fill=PALETTE["blue"], width=3)
    for (x, y), label, value in zip(points, labels, values, strict=True):
        draw.ellipse((x - 5, y - 5, x + 5, y + 5), fill=PALETTE["red"])
        draw.text((x, y - 9), f"{value:g}", fill=INK, font=_font(13), anchor="mb")
        draw.text((x, bottom + 6), label, fill=INK, font=_font(13), anchor="mt")
    return image


def pie_chart(title: str, labels: Sequence[str], shares: Sequence[float]) -> Image.Image:
    """A pie with a legend giving each share in percent."""
    image, draw = _canvas(title)
    box = (40, 60, 260, 280)
    start = -90.0
    colors = list(PALETTE.values())
    total = sum(shares)
    for index, (label, share) in enumerate(zip(labels, shares, strict=True)):
        end = start + 360.0 * share / total
        color = colors[index % len(colors)]
        draw.pieslice(box, start, end, fill=color, outline=BACKGROUND, width=2)
        y = 80 + index * 30
        draw.rectangle((290, y, 308, y + 18), fill=color)
        draw.text((316, y + 9), f"{label} {share:g}%", fill=INK, font=_font(15), anchor="lm")
        start = end
    return image


def _shape(draw: ImageDraw.ImageDraw, kind: str, x: float, y: float, r: float, color) -> None:
    if kind == "circle":
        draw.ellipse((x - r, y - r, x + r, y + r), fill=color, outline=INK)
    elif kind == "square":
        draw.rectangle((x - r, y - r, x + r, y + r), fill=color, outline=INK)
    elif kind == "triangle":
        draw.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=color, outline=INK)
    elif kind == "star":
        points = []
        for k in range(10):
            radius = r if k % 2 == 0 else r * 0.45
            angle = math.pi / 2 + k * math.pi / 5
            points.append((x + radius * math.cos(angle), y - radius * math.sin(angle)))
        draw.polygon(points, fill=color, outline=INK)
    else:
        raise ValueError(f"unknown shape {kind!r}")


def counting_scene(
    groups: Sequence[tuple[str, str, int]], *, seed: int, title: str | None = None
) -> Image.Image:
    """Scattered shapes that do not overlap: ``groups`` = (shape, colour, how many)."""
    image, draw = _canvas(title)
    rng = random.Random(seed)
    placed: list[tuple[float, float]] = []
    radius = 17
    for kind, color, count in groups:
        for _ in range(count):
            for _attempt in range(500):
                x = rng.uniform(30, WIDTH - 30)
                y = rng.uniform(50 if title else 30, HEIGHT - 30)
                if all((x - px) ** 2 + (y - py) ** 2 > (2.3 * radius) ** 2 for px, py in placed):
                    break
            placed.append((x, y))
            _shape(draw, kind, x, y, radius, PALETTE[color])
    return image


def shapes_row(items: Sequence[tuple[str, str, str]], title: str | None = None) -> Image.Image:
    """Big shapes in a row, each with a caption: ``items`` = (shape, colour, caption)."""
    image, draw = _canvas(title)
    slot = WIDTH / len(items)
    for index, (kind, color, caption) in enumerate(items):
        x = slot * index + slot / 2
        _shape(draw, kind, x, HEIGHT / 2, min(slot / 3, 60), PALETTE[color])
        draw.text((x, HEIGHT / 2 + 80), caption, fill=INK, font=_font(15), anchor="mt")
    return image


def text_card(
    title: str, lines: Sequence[str | tuple[str, ...]], *, ruled: bool = False
) -> Image.Image:
    """A card (sign, receipt, note) with a heading and lines of text.

    A line is a string (left-aligned) or a tuple of cells: the first left-aligned, the others
    right-aligned in evenly spaced columns (a table that does not depend on the font's widths).
    """
    image, draw = _canvas()
    draw.rounded_rectangle(
        (30, 20, WIDTH - 30, HEIGHT - 20), radius=14, fill=(255, 255, 255), outline=INK, width=2
    )
    draw.text((WIDTH // 2, 40), title, fill=INK, font=_font(22), anchor="mt")
    left, right = 52, WIDTH - 52
    for index, line in enumerate(lines):
        y = 84 + index * 28
        cells = (line,) if isinstance(line, str) else line
        draw.text((left, y), cells[0], fill=INK, font=_font(17))
        others = cells[1:]
        for column, cell in enumerate(others, start=1):
            x = right - (right - left) * 0.45 * (len(others) - column) / max(len(others), 1)
            draw.text((x, y), cell, fill=INK, font=_font(17), anchor="ra")
        if ruled:
            draw.line((50, y + 24, WIDTH - 50, y + 24), fill=(210, 210, 210))
    return image


def stick_figure(draw: ImageDraw.ImageDraw, x: float, y: float, scale: float, mood: str) -> None:
    """A stick figure standing at (x, y) (feet); ``mood`` is happy, sad, tired or strong."""
    head = 14 * scale
    neck = y - 70 * scale
    draw.ellipse((x - head, neck - 2 * head, x + head, neck), outline=INK, width=3)
    mouth_y = neck - head * 0.6
    if mood == "happy" or mood == "strong":
        draw.arc(
            (x - 7 * scale, mouth_y - 7 * scale, x + 7 * scale, mouth_y + 3 * scale),
            20,
            160,
            fill=INK,
            width=2,
        )
    else:
        draw.arc(
            (x - 7 * scale, mouth_y - 1 * scale, x + 7 * scale, mouth_y + 9 * scale),
            200,
            340,
            fill=INK,
            width=2,
        )
    hip = y - 30 * scale
    draw.line((x, neck, x, hip), fill=INK, width=3)
    draw.line((x, hip, x - 15 * scale, y), fill=INK, width=3)
    draw.line((x, hip, x + 15 * scale, y), fill=INK, width=3)
    arm = neck + 15 * scale
    if mood == "strong":
        draw.line((x, arm, x - 25 * scale, arm - 25 * scale), fill=INK, width=3)
        draw.line((x, arm, x + 25 * scale, arm - 25 * scale), fill=INK, width=3)
    elif mood == "tired":
        draw.line((x, arm, x - 18 * scale, arm + 30 * scale), fill=INK, width=3)
        draw.line((x, arm, x + 18 * scale, arm + 30 * scale), fill=INK, width=3)
        draw.line(
            (x + 22 * scale, arm + 20 * scale, x + 22 * scale, y), fill=PALETTE["brown"], width=4
        )
    else:
        draw.line((x, arm, x - 22 * scale, arm + 15 * scale), fill=INK, width=3)
        draw.line((x, arm, x + 22 * scale, arm + 15 * scale), fill=INK, width=3)


def meme_panels(
    top: str, left_caption: str, right_caption: str, moods: tuple[str, str], bottom: str = ""
) -> Image.Image:
    """A two-panel meme drawn as a diagram: caption on top, two stick figures, labels below."""
    image, draw = _canvas()
    draw.text((WIDTH // 2, 12), top, fill=INK, font=_font(19), anchor="mt")
    for index, (caption, mood) in enumerate(zip((left_caption, right_caption), moods, strict=True)):
        x0 = 20 + index * (WIDTH // 2)
        draw.rectangle((x0, 44, x0 + WIDTH // 2 - 40, HEIGHT - 50), outline=INK, width=2)
        stick_figure(draw, x0 + (WIDTH // 2 - 40) / 2, HEIGHT - 75, 1.5, mood)
        draw.text(
            (x0 + (WIDTH // 2 - 40) / 2, HEIGHT - 44),
            caption,
            fill=INK,
            font=_font(16),
            anchor="mt",
        )
    if bottom:
        draw.text(
            (WIDTH // 2, HEIGHT - 20), bottom, fill=PALETTE["red"], font=_font(14), anchor="mt"
        )
    return image


def clock_face(hour: int, minute: int, title: str | None = None) -> Image.Image:
    """An analogue clock showing ``hour:minute``."""
    image, draw = _canvas(title)
    cx, cy, r = WIDTH / 2, HEIGHT / 2 + 10, 115
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(255, 255, 255), outline=INK, width=4)
    for mark in range(1, 13):
        angle = math.radians(90 - mark * 30)
        draw.text(
            (cx + 0.82 * r * math.cos(angle), cy - 0.82 * r * math.sin(angle)),
            str(mark),
            fill=INK,
            font=_font(16),
            anchor="mm",
        )
    minute_angle = math.radians(90 - minute * 6)
    hour_angle = math.radians(90 - (hour % 12 + minute / 60) * 30)
    draw.line(
        (cx, cy, cx + 0.7 * r * math.cos(minute_angle), cy - 0.7 * r * math.sin(minute_angle)),
        fill=INK,
        width=4,
    )
    draw.line(
        (cx, cy, cx + 0.45 * r * math.cos(hour_angle), cy - 0.45 * r * math.sin(hour_angle)),
        fill=PALETTE["red"],
        width=6,
    )
    return image


def right_triangle(a: str, b: str, c: str, title: str | None = None) -> Image.Image:
    """A right triangle with its legs labelled ``a`` and ``b`` and hypotenuse ``c``."""
    image, draw = _canvas(title)
    p0, p1, p2 = (100, 260), (380, 260), (100, 70)
    draw.polygon([p0, p1, p2], outline=INK, width=3, fill=(235, 242, 252))
    draw.rectangle((100, 240, 120, 260), outline=INK, width=2)
    draw.text((240, 268), a, fill=INK, font=_font(18), anchor="mt")
    draw.text((88, 165), b, fill=INK, font=_font(18), anchor="rm")
    draw.text((252, 155), c, fill=PALETTE["red"], font=_font(18), anchor="lb")
    return image


def step_panel(caption: str, kind: str, amount: int, color: str = "blue") -> Image.Image:
    """One illustration of an interleaved answer: ``amount`` items of ``kind`` and a caption.

    ``kind`` is a shape name, ``bars`` (a growing bar series) or ``blank`` (an empty frame, the
    picture a weak model gives).
    """
    image, draw = _canvas()
    draw.rectangle((10, 10, WIDTH - 10, HEIGHT - 10), outline=PALETTE[color], width=3)
    if kind == "bars":
        for index in range(amount):
            height = 30 + 25 * index
            x0 = 60 + index * 60
            draw.rectangle((x0, 240 - height, x0 + 40, 240), fill=PALETTE[color])
    elif kind != "blank":
        per_row = 6
        for index in range(amount):
            x = 80 + (index % per_row) * 64
            y = 80 + (index // per_row) * 70
            _shape(draw, kind, x, y, 22, PALETTE[color])
    draw.text((WIDTH // 2, HEIGHT - 36), caption, fill=INK, font=_font(17), anchor="mm")
    return image


def park_scene(*, night: bool = False) -> Image.Image:
    """A house, a tree and a person on the grass; a sun and a kite by day, a moon and stars by
    night."""
    sky = (30, 36, 80) if night else (200, 228, 250)
    image = Image.new("RGB", (WIDTH, HEIGHT), sky)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 230, WIDTH, HEIGHT), fill=(110, 170, 90))
    if night:
        draw.ellipse((370, 30, 420, 80), fill=(245, 245, 210))
        draw.ellipse((385, 24, 435, 74), fill=sky)
        for x, y in ((60, 40), (140, 70), (220, 30), (300, 60), (460, 110), (30, 120)):
            _shape(draw, "star", x, y, 7, PALETTE["yellow"])
    else:
        draw.ellipse((30, 25, 90, 85), fill=PALETTE["yellow"])
    draw.rectangle((150, 150, 260, 240), fill=(235, 225, 200), outline=INK, width=2)
    draw.polygon([(140, 150), (205, 100), (270, 150)], fill=PALETTE["red"], outline=INK)
    draw.rectangle((193, 195, 217, 240), fill=PALETTE["blue"])
    window = (255, 230, 120) if night else (210, 235, 255)
    draw.rectangle((160, 165, 185, 185), fill=window, outline=INK)
    draw.rectangle((230, 165, 255, 185), fill=window, outline=INK)
    draw.rectangle((312, 170, 326, 240), fill=PALETTE["brown"])
    draw.ellipse((285, 115, 355, 185), fill=PALETTE["green"], outline=INK)
    stick_figure(draw, 410, 285, 0.9, "happy")
    if not night:
        draw.polygon([(430, 120), (448, 140), (430, 162), (412, 140)], fill=PALETTE["orange"])
        draw.line((430, 162, 420, 222), fill=INK, width=1)
    return image
