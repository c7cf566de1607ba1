"""CONTENT (FORMATS.md): its shape, its images, and the content-addressed image store.

CONTENT is a string or a list of segments ``{"type": "text", "text": ...}`` /
``{"type": "image", "image": PATH}``. On import every image is checked (a relative path that stays
inside its root, no URL, a file that Pillow decodes in full, every frame, not a decompression bomb
nor too thin for a vision-language model) and
copied into the image store under :func:`data.storage.engine.data_dir`, named by its SHA-256
(``images/ab/<sha256>.<ext>``). The stored segment then reads::

    {"type": "image", "image": "images/ab/ab12....jpg", "source": "images/0001.jpg"}

so the database plus the data folder are self-contained. An image that was missing at import
time and let through with ``--allow-missing-images`` is stored as
``{"type": "image", "image": null, "source": "images/0001.jpg", "missing": true}``.
Pages and judges reach stored images only through :func:`resolve_image`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from PIL import Image

from data.storage.engine import data_dir
from schemas.option_text import Message, OptionError, OptionText

SEGMENT_TYPES: tuple[str, ...] = ("text", "image")
MAX_IMAGE_PIXELS = 64_000_000
"""Refuse images with more pixels than this (decompression-bomb guard, ~8000 × 8000)."""
MAX_IMAGE_BYTES = 50 * 1024 * 1024
"""Refuse image files larger than this."""
MAX_DECODED_PIXELS = 4 * MAX_IMAGE_PIXELS
"""Refuse multi-frame images (GIF, TIFF, WebP) whose frames hold more pixels than this together."""
MAX_ASPECT_RATIO = 200
"""Refuse images whose long side is more than this many times the short side: vision-language
processors refuse them (transformers' Qwen2-VL image processor: "absolute aspect ratio must be
smaller than 200"), so a critic could not score the unit."""
IMAGE_EXTENSIONS: dict[str, str] = {
    "JPEG": "jpg",
    "PNG": "png",
    "GIF": "gif",
    "WEBP": "webp",
    "BMP": "bmp",
    "TIFF": "tiff",
}
"""Pillow formats we accept, with the extension used in the store."""
STORE_FOLDER = "images"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(//|[^\\/])")


class ContentError(OptionError):
    """CONTENT that is malformed, or an image that cannot be accepted.

    ``field`` names the place inside the record (``question[0].image``); the message says what
    is wrong and what to do (an :class:`~schemas.option_text.OptionText` where it names an
    option of the import).
    """

    def __init__(self, field: str, message: Message) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class MissingImage(ContentError):
    """An image reference whose file does not exist (other checks passed)."""


@dataclass(frozen=True)
class CheckedImage:
    """An image file that passed every check, ready to be copied into the store."""

    path: Path
    sha256: str
    extension: str

    @property
    def store_path(self) -> str:
        """Its path in the store, relative to the data folder."""
        return f"{STORE_FOLDER}/{self.sha256[:2]}/{self.sha256}.{self.extension}"


def validate_content(value: Any, field: str) -> str | list[dict[str, Any]]:
    """Check the shape of CONTENT (a string or a list of text/image segments) and return it.

    Raises :class:`ContentError` naming ``field`` and the segment at fault.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise ContentError(
            field,
            f"`{field}` is {_kind(value)}, but CONTENT is a string or a list of "
            'segments like {"type": "text", "text": "..."}',
        )
    for index, segment in enumerate(value):
        where = f"{field}[{index}]"
        if not isinstance(segment, dict):
            raise ContentError(
                where, f"`{where}` is {_kind(segment)}, but a segment is an object with a `type`"
            )
        kind = segment.get("type")
        if kind not in SEGMENT_TYPES:
            raise ContentError(
                f"{where}.type",
                f"`{where}.type` is {kind!r}, but segments are of type 'text' or 'image'",
            )
        if kind == "text" and not isinstance(segment.get("text"), str):
            raise ContentError(
                f"{where}.text",
                f"`{where}.text` is {_kind(segment.get('text'))}, but a text segment needs a "
                "string `text`",
            )
        if kind == "image" and not (
            isinstance(segment.get("image"), str) or _is_missing_marker(segment)
        ):
            raise ContentError(
                f"{where}.image",
                f"`{where}.image` is {_kind(segment.get('image'))}, but an image segment "
                "needs a path string `image`",
            )
    return value


def _is_missing_marker(segment: dict[str, Any]) -> bool:
    return segment.get("missing") is True and isinstance(segment.get("source"), str)


def iter_images(content: Any) -> list[str]:
    """Paths of the stored images of ``content`` in order (missing images are left out)."""
    if not isinstance(content, list):
        return []
    return [
        segment["image"]
        for segment in content
        if isinstance(segment, dict)
        and segment.get("type") == "image"
        and isinstance(segment.get("image"), str)
    ]


def check_image(raw_path: Any, root: Path, field: str) -> CheckedImage:
    """Check one image reference of an import file and return the verified file.

    ``raw_path`` must be a relative path that stays inside ``root`` once resolved (symlinks
    included), name an existing file under :data:`MAX_IMAGE_BYTES` that Pillow decodes in full
    (every frame), with at most :data:`MAX_IMAGE_PIXELS` pixels and an aspect ratio of at most
    :data:`MAX_ASPECT_RATIO`. Raises :class:`ContentError`, or
    :class:`MissingImage` when only the file is missing.
    """
    path = _confined(
        raw_path, root, field, hint=OptionText("keep images inside it or give {images_root}")
    )
    if not path.is_file():
        raise MissingImage(
            field,
            OptionText(
                "`{field}` names {path}, which is not a file under {root}: add the file, fix the "
                "path, give {images_root}, or import without images ({allow_missing_images})",
                field=field,
                path=raw_path,
                root=root,
            ),
        )
    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise ContentError(
            field,
            f"`{field}` names {raw_path}, a file of {size:,} bytes, over the "
            f"{MAX_IMAGE_BYTES:,}-byte limit: shrink the image",
        )
    extension = _verified_extension(path, raw_path, field)
    return CheckedImage(path=path, sha256=_sha256_file(path), extension=extension)


def data_url_bytes(reference: str, field: str) -> bytes:
    """The bytes of a base64 ``data:`` URL (``data:image/png;base64,...``); :class:`ContentError`
    when it is not base64 or empty."""
    header, _, payload = reference.partition(",")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if not header.endswith(";base64") or not decoded:
            raise ValueError
    except (ValueError, binascii.Error):
        raise ContentError(
            field,
            f"`{field}`: an image `data:` URL must be base64 (data:image/png;base64,...) and not "
            "empty",
        ) from None
    return decoded


def check_embedded_image(data: bytes, staging: Path, field: str) -> CheckedImage:
    """Check image bytes carried in the file itself (a ``data:`` URL, a Hugging Face ``Image``
    value) as :func:`check_image` checks a file: they are written once, named by their SHA-256,
    under ``staging`` (a private folder the caller removes after storing the image)."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ContentError(
            field,
            f"`{field}` holds an image of {len(data):,} bytes, over the {MAX_IMAGE_BYTES:,}-byte "
            "limit: shrink the image",
        )
    name = f"embedded-{hashlib.sha256(data).hexdigest()[:16]}"
    path = staging / name
    if not path.exists():
        path.write_bytes(data)
    return check_image(name, staging, field)


def store_image(image: CheckedImage, root: Path | None = None) -> str:
    """Copy ``image`` into the store (once; the name is its hash) and return its stored path."""
    target = (root or data_dir()) / image.store_path
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(handle)
        shutil.copyfile(image.path, temporary)
        os.replace(temporary, target)
    return image.store_path


def resolve_image(stored_path: str, root: Path | None = None) -> Path:
    """The file of a stored image path, confined to the data folder (``root``).

    Raises :class:`ContentError` for absolute paths, URLs and paths that leave the folder.
    """
    folder = root or data_dir()
    return _confined(stored_path, folder, "image", hint="stored images live in the data folder")


def _confined(raw_path: Any, root: Path, field: str, *, hint: Message) -> Path:
    if not isinstance(raw_path, str) or not raw_path.strip():
        raise ContentError(field, f"`{field}` is {_kind(raw_path)}, but it must be a file path")
    if _URL.match(raw_path):
        raise ContentError(
            field,
            f"`{field}` is a URL ({raw_path}); CritiqueLab does not download images: save the "
            f"file under {root} and give its relative path",
        )
    if PurePosixPath(raw_path).is_absolute() or PureWindowsPath(raw_path).is_absolute():
        raise ContentError(
            field,
            OptionText(
                "`{field}` is an absolute path ({path}); image paths are relative to {root}: "
                "make it relative; {hint}",
                field=field,
                path=raw_path,
                root=root,
                hint=hint,
            ),
        )
    base = root.resolve()
    resolved = (base / raw_path).resolve()
    if not resolved.is_relative_to(base):
        raise ContentError(
            field,
            OptionText(
                "`{field}` path {path} leads outside the image root {root}: {hint}",
                field=field,
                path=raw_path,
                root=root,
                hint=hint,
            ),
        )
    return resolved


def _verified_extension(path: Path, raw_path: str, field: str) -> str:
    """The store extension of an image that Pillow decodes in full, every frame of it.

    ``verify()`` reads only the structure (and nothing of a JPEG), so a truncated or corrupt file
    passed it and failed later, in the browser or the critic; decoding every pixel is the test
    that what is stored can be shown and scored. The size is checked before anything is decoded.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                image_format = image.format or ""
                _check_size(width, height, raw_path, field)
                _decode_every_frame(image, raw_path, field)
    except ContentError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise ContentError(
            field, f"`{field}` names {raw_path}, refused as a decompression bomb: {error}"
        ) from None
    except Exception as error:  # Pillow raises many types for unreadable files
        raise ContentError(
            field,
            f"`{field}` names {raw_path}, which Pillow cannot read as an image "
            f"({type(error).__name__}: {error}): replace the file",
        ) from None
    if image_format not in IMAGE_EXTENSIONS:
        raise ContentError(
            field,
            f"`{field}` names {raw_path}, a {image_format or 'unknown'} image; use one of "
            + ", ".join(IMAGE_EXTENSIONS),
        )
    return IMAGE_EXTENSIONS[image_format]


def _check_size(width: int, height: int, raw_path: str, field: str) -> None:
    pixels = width * height
    if pixels > MAX_IMAGE_PIXELS:
        raise ContentError(
            field,
            f"`{field}` names {raw_path} with {pixels:,} pixels, over the {MAX_IMAGE_PIXELS:,} "
            "limit: shrink the image",
        )
    if width < 1 or height < 1 or max(width, height) > MAX_ASPECT_RATIO * min(width, height):
        raise ContentError(
            field,
            f"`{field}` names {raw_path}, an image of {width:,} × {height:,} pixels: the long side "
            f"may be at most {MAX_ASPECT_RATIO} times the short one (vision-language models "
            "refuse thinner images): crop or pad it",
        )


def _decode_every_frame(image: Image.Image, raw_path: str, field: str) -> None:
    """Decode every frame of ``image``; Pillow raises on a truncated or corrupt one."""
    decoded = 0
    for frame in range(getattr(image, "n_frames", 1)):
        image.seek(frame)
        width, height = image.size
        _check_size(width, height, raw_path, f"{field} (frame {frame + 1})")
        decoded += width * height
        if decoded > MAX_DECODED_PIXELS:
            raise ContentError(
                field,
                f"`{field}` names {raw_path}, whose frames hold over {MAX_DECODED_PIXELS:,} pixels "
                "together: keep fewer or smaller frames",
            )
        image.load()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    return f"{value!r} ({type(value).__name__})" if len(repr(value)) <= 40 else type(value).__name__
