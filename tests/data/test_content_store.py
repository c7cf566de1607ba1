"""CONTENT shape checks, the image store, and stored paths confined to the data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from importing_fixtures import make_image

from data.content import (
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
