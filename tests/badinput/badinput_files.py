"""The bad-input workspace: the committed corpus plus the files generated at test time.

Big or binary files are not committed; each is made here by a small function named after the
file it writes. :func:`build_workspace` lays out ``root/`` (the corpus and its images),
``outside/`` (a valid image outside the root), ``store/`` (the data folder) and ``db/``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

CORPUS = Path(__file__).resolve().parent / "corpus"
MANIFEST = Path(__file__).resolve().parent / "README.md"
VALID_LINE = (CORPUS / "jsonl_invalid_json.jsonl").read_text(encoding="utf-8").splitlines()[0]
HUGE_LINE_BYTES = 50 * 1024 * 1024
CORPUS_SUFFIXES = (".json", ".jsonl", ".csv")


@dataclass(frozen=True)
class Case:
    """One row of the manifest table in README.md."""

    file: str
    command: str
    line: int | None
    field: str
    wrong: str
    expected: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        return [*self.command.split(), self.file]


def manifest_cases() -> list[Case]:
    """The CLI cases of the first table of README.md."""
    cases = []
    for row in MANIFEST.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] in ("file", "---") or not cells[0].endswith(CORPUS_SUFFIXES):
            continue
        file, command, line, field, wrong, expected = cells
        cases.append(
            Case(file, command, int(line) if line else None, field, wrong,
                 tuple(re.findall(r"`([^`]+)`", expected)))
        )  # fmt: skip
    return cases


def upload_only_cases() -> list[tuple[str, tuple[str, ...]]]:
    """The zip archives of the second table: (file name, expected fragments)."""
    rows = []
    for row in MANIFEST.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].endswith(".zip"):
            rows.append((cells[0], tuple(re.findall(r"`([^`]+)`", cells[2]))))
    return rows


def png_bytes(size: tuple[int, int] = (32, 32), color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload)) + kind + payload
        + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)
    )  # fmt: skip


def bomb_png(side: int = 20_000) -> bytes:
    """A valid 1-bit PNG of side × side pixels, all black: about 50 kB, 400 megapixels."""
    row = b"\x00" + bytes((side + 7) // 8)
    compressor = zlib.compressobj(9)
    parts = [compressor.compress(row * 1000) for _ in range(side // 1000)]
    data = b"".join(parts) + compressor.flush()
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", data)
        + _png_chunk(b"IEND", b"")
    )  # fmt: skip


def _noise_png(image_format: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    image = Image.frombytes("RGB", (128, 128), os.urandom(128 * 128 * 3))
    (image.convert("P") if image_format == "GIF" else image).save(buffer, format=image_format)
    return buffer.getvalue()


def thin_png(width: int = 64_000_000) -> bytes:
    """A valid 1-bit PNG of width × 1 pixels (64 megapixels, within the pixel limit): ~8 kB."""
    data = zlib.compress(b"\x00" + bytes((width + 7) // 8), 9)
    header = struct.pack(">IIBBBBB", width, 1, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", data)
        + _png_chunk(b"IEND", b"")
    )  # fmt: skip


def _bad_second_line(root: Path, name: str, second: bytes, first: str = VALID_LINE) -> None:
    (root / name).write_bytes(first.encode() + b"\n" + second + b"\n")


def _judgement_line() -> str:
    return (CORPUS / "judg_invalid_json.jsonl").read_text(encoding="utf-8").splitlines()[0]


def _generate(root: Path, outside: Path) -> None:
    images = root / "images"
    images.mkdir(exist_ok=True)
    (images / "ok.png").write_bytes(png_bytes())
    outside.mkdir(exist_ok=True)
    (outside / "secret.png").write_bytes(png_bytes(color="blue"))
    noise = _noise_png()
    (images / "truncated.png").write_bytes(noise[: len(noise) // 2])
    (images / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2048))
    (images / "bomb.png").write_bytes(bomb_png())
    truncated_formats = (("JPEG", "jpg"), ("GIF", "gif"), ("BMP", "bmp"), ("TIFF", "tif"))
    for image_format, extension in truncated_formats:
        whole = _noise_png(image_format)  # Pillow's verify() passed these cut in half
        (images / f"truncated.{extension}").write_bytes(whole[: len(whole) // 2])
    (images / "thin.png").write_bytes(thin_png())
    (images / "link.png").symlink_to(outside / "secret.png")

    item = json.loads(VALID_LINE) | {"item_id": "bad-2", "responses": []}
    question = json.dumps(item | {"question": "How many apples?"})
    _bad_second_line(
        root, "jsonl_invalid_utf8.jsonl", question.replace("apples", "\xff\xfe").encode("latin-1")
    )  # noqa: E501
    _bad_second_line(
        root, "jsonl_nul_byte.jsonl", question.replace("apples", "ap\x00ples").encode()
    )
    deep = '{"item_id": "bad-2", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _bad_second_line(root, "jsonl_deep_nesting.jsonl", deep.encode())
    with (root / "jsonl_huge_line.jsonl").open("wb") as out:
        out.write(VALID_LINE.encode() + b"\n")
        out.write(b'{"item_id": "bad-2", "question": "')
        out.write(b"x" * HUGE_LINE_BYTES)
        out.write(b'", "responses": []}\n')
    mmie = (CORPUS / "valid_mmie.json").read_text(encoding="utf-8")
    (root / "mmie_invalid_utf8.json").write_bytes(
        mmie.replace("Plan a picnic", "Plan a \xff\xfe").encode("latin-1")
    )
    judgement_deep = '{"judge": "gpt-4", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _bad_second_line(root, "judg_deep_nesting.jsonl", judgement_deep.encode(), _judgement_line())
    judgement = _judgement_line().replace('"v-1/m1"', '"v-1/m2"').replace("Correct", "\xff\xfe")
    _bad_second_line(
        root, "judg_invalid_utf8.jsonl", judgement.encode("latin-1"), _judgement_line()
    )


def zip_archives(root: Path) -> dict[str, Path]:
    """The upload-only zip cases, each a valid dataset plus one hostile entry."""
    dataset = (CORPUS / "valid_dataset.jsonl").read_bytes()
    hostile: dict[str, Callable[[zipfile.ZipFile], None]] = {
        "zip_slip_dotdot.zip": lambda z: z.writestr("../../escaped.txt", b"escaped"),
        "zip_slip_absolute.zip": lambda z: z.writestr("/tmp/critiquelab-escaped.txt", b"x"),
        "zip_symlink_entry.zip": _add_symlink_entry,
    }
    archives = {}
    for name, add in hostile.items():
        path = root / name
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("valid_dataset.jsonl", dataset)
            archive.writestr("images/ok.png", png_bytes())
            add(archive)
        archives[name] = path
    return archives


def _add_symlink_entry(archive: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("images/passwd.png")
    info.create_system = 3  # Unix, so the mode bits below are honoured by unzip tools
    info.external_attr = 0o120777 << 16  # symlink
    archive.writestr(info, "/etc/passwd")


def build_workspace(base: Path) -> dict[str, Path]:
    """Copy the corpus to ``base/root`` and generate the rest; return the folders."""
    root, outside = base / "root", base / "outside"
    shutil.copytree(CORPUS, root)
    _generate(root, outside)
    (base / "store").mkdir()
    (base / "db").mkdir()
    return {"root": root, "outside": outside, "store": base / "store", "db": base / "db"}
