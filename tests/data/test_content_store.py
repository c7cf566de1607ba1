"""CONTENT shape checks, the image store, and stored paths confined to the data folder."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from importing_fixtures import make_image
from PIL import Image

from data.storage import content
from data.storage.content import (
    ContentError,
    check_image,
    iter_images,
    resolve_image,
    store_image,
    validate_content,
)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (42, "`question` is 42 (int), but CONTENT is a string or a list of segments like "
         '{"type": "text", "text": "..."}'),
        (["hi"], "`question[0]` is 'hi' (str), but a segment is an object with a `type`"),
        ([{"type": "video"}], "`question[0].type` is 'video', but segments are of type 'text' "
         "or 'image'"),
        ([{"type": "text", "text": 5}], "`question[0].text` is 5 (int), but a text segment needs "
         "a string `text`"),
        ([{"type": "image"}], "`question[0].image` is missing, but an image segment needs a path "
         "string `image`"),
    ],
)  # fmt: skip
def test_malformed_content_names_the_segment(content: object, message: str) -> None:
    with pytest.raises(ContentError) as error:
        validate_content(content, "question")
    assert str(error.value) == message


def test_iter_images_skips_text_and_missing_images() -> None:
    content = [
        {"type": "text", "text": "a"},
        {"type": "image", "image": "images/ab/ab1.png", "source": "x.png"},
        {"type": "image", "image": None, "source": "y.png", "missing": True},
    ]
    assert validate_content(content, "question") == content
    assert iter_images(content) == ["images/ab/ab1.png"]
    assert iter_images("plain text") == []


def test_store_is_content_addressed_and_resolve_stays_inside(tmp_path: Path) -> None:
    root, store = tmp_path / "in", tmp_path / "store"
    make_image(root / "a.png")
    make_image(root / "copy.png")
    first, second = check_image("a.png", root, "image"), check_image("copy.png", root, "image")
    assert first.sha256 == second.sha256
    assert store_image(first, store) == store_image(second, store) == first.store_path
    assert [p.name for p in store.rglob("*.png")] == [f"{first.sha256}.png"]
    assert resolve_image(first.store_path, store) == store / first.store_path
    os.symlink("/etc", store / "images" / "etc")
    for bad in ("../in/a.png", "/etc/passwd", "file:///etc/passwd", "images/etc/passwd"):
        with pytest.raises(ContentError):
            resolve_image(bad, store)


def _noise(size: tuple[int, int], seed: int) -> Image.Image:
    return Image.frombytes("RGB", size, random.Random(seed).randbytes(size[0] * size[1] * 3))


def test_a_truncated_later_frame_of_an_animation_is_refused(tmp_path: Path) -> None:
    """Decoding only the first frame would let a GIF whose last frame is cut off through."""
    frames = [_noise((64, 64), seed).convert("P") for seed in range(3)]
    whole = tmp_path / "whole.gif"
    frames[0].save(whole, save_all=True, append_images=frames[1:])
    data = whole.read_bytes()
    (tmp_path / "cut.gif").write_bytes(data[: len(data) - 200])
    with Image.open(tmp_path / "cut.gif") as cut:  # the first frame alone decodes
        cut.load()
        assert cut.n_frames == 3
    assert check_image("whole.gif", tmp_path, "image").extension == "gif"
    with pytest.raises(ContentError, match=r"cut\.gif, which Pillow cannot read.*truncated"):
        check_image("cut.gif", tmp_path, "image")


@pytest.mark.parametrize(
    ("size", "accepted"), [((200, 1), True), ((201, 1), False), ((3, 700), False)]
)
def test_images_too_thin_for_a_vision_language_model_are_refused(
    tmp_path: Path, size: tuple[int, int], accepted: bool
) -> None:
    Image.new("L", size).save(tmp_path / "thin.png")
    if accepted:
        assert check_image("thin.png", tmp_path, "image").extension == "png"
        return
    with pytest.raises(ContentError, match=f"{size[0]:,} × {size[1]:,} pixels: the long side"):
        check_image("thin.png", tmp_path, "image")


def test_frames_together_over_the_decoding_limit_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = [_noise((10, 10), seed).convert("P") for seed in range(4)]
    frames[0].save(tmp_path / "many.gif", save_all=True, append_images=frames[1:])
    monkeypatch.setattr(content, "MAX_DECODED_PIXELS", 350)  # 4 frames × 100 pixels
    with pytest.raises(ContentError, match="frames hold over 350 pixels together"):
        check_image("many.gif", tmp_path, "image")
    monkeypatch.setattr(content, "MAX_DECODED_PIXELS", 400)
    assert check_image("many.gif", tmp_path, "image").extension == "gif"
