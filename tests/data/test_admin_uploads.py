"""Safe unpacking of uploaded zips: zip-slip, absolute names, links, counts, sizes."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
from admin_factory import add_people
from PIL import Image
from sqlalchemy import func
from sqlmodel import select

from data.io.importers.uploads import (
    UnsafeUpload,
    UploadRejected,
    extract_zip,
    find_dataset_file,
    import_dataset_upload,
    import_judgements_upload,
    safe_file_name,
    upload_folder,
)
from data.services.roles import PermissionDenied
from data.storage.audit import list_events
from data.storage.content import resolve_image
from data.storage.engine import session_scope
from schemas.tables import Dataset, Item, Judgement, Response


def _zip(entries: dict[str, bytes], *, links: tuple[str, ...] = ()) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    buffer.seek(0)
    return buffer


def test_a_clean_zip_unpacks_with_its_folders(tmp_path: Path):
    archive = _zip({"data.jsonl": b'{"item_id": "a"}\n', "images/0001.png": b"png"})
    files = extract_zip(archive, tmp_path)
    assert sorted(path.relative_to(tmp_path).as_posix() for path in files) == [
        "data.jsonl",
        "images/0001.png",
    ]
    assert (tmp_path / "images" / "0001.png").read_bytes() == b"png"
    assert find_dataset_file(files, tmp_path) == tmp_path / "data.jsonl"


@pytest.mark.parametrize(
    ("entries", "links", "message"),
    [
        ({"../evil.txt": b"x"}, (), "'../evil.txt' points outside the archive"),
        ({"images/../../evil.txt": b"x"}, (), "points outside the archive"),
        ({"/etc/cron.d/evil": b"x"}, (), "'/etc/cron.d/evil' has an absolute name"),
        ({"C:/evil.txt": b"x"}, (), "absolute name"),
        ({"data.jsonl": b"{}"}, ("images/link.png",), "'images/link.png' is a symbolic link"),
    ],
)
def test_dangerous_entries_are_refused_before_anything_is_written(
    tmp_path: Path, entries, links, message
):
    destination = tmp_path / "out"
    destination.mkdir()
    with pytest.raises(UnsafeUpload, match=message):
        extract_zip(_zip(entries, links=links), destination)
    assert list(destination.iterdir()) == []
    assert not (tmp_path / "evil.txt").exists()


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        # FileExistsError / NotADirectoryError, then the generic error page
        ({"images": b"a file", "images/0001.png": b"png"}, "'images' is both a file and a folder"),
        ({"images/0001.png": b"png", "images": b"a file"}, "'images' is both a file and a folder"),
        ({"images/": b"", "images": b"a file"}, "'images' is both a file and a folder"),
        # OSError: File name too long
        ({"images/" + "n" * 300 + ".png": b"png"}, "a name of 304 characters; at most 255"),
        # RecursionError
        ({"d/" * 2000 + "deep.png": b"png"}, "is 2,000 folders deep; at most 64"),
    ],
)
def test_entries_the_file_system_cannot_hold_are_refused_in_words(tmp_path: Path, entries, message):
    destination = tmp_path / "out"
    destination.mkdir()
    with pytest.raises(UnsafeUpload, match=message):
        extract_zip(_zip(entries), destination)
    assert list(destination.iterdir()) == []


def test_too_many_entries_are_refused(tmp_path: Path):
    archive = _zip({f"images/{i}.png": b"x" for i in range(6)})
    with pytest.raises(UnsafeUpload, match="the zip has 6 entries; at most 5 are accepted"):
        extract_zip(archive, tmp_path, max_files=5)
    assert list(tmp_path.iterdir()) == []


def test_too_large_a_total_is_refused(tmp_path: Path):
    archive = _zip({"a.bin": b"0" * 600, "b.bin": b"0" * 600})
    with pytest.raises(UnsafeUpload, match="more than the 1,000 bytes allowed"):
        extract_zip(archive, tmp_path, max_bytes=1000)
    assert list(tmp_path.iterdir()) == []


def test_a_zip_that_understates_its_sizes_is_stopped(tmp_path: Path):
    archive = _zip({"bomb.bin": b"0" * 100_000})
    raw = bytearray(archive.getvalue())
    # rewrite the uncompressed size (4 bytes) in the central directory entry to 10 bytes
    central = raw.rindex(b"PK\x01\x02")
    raw[central + 24 : central + 28] = (10).to_bytes(4, "little")
    # zipfile reads no more than the stated size, and the CRC then fails
    with pytest.raises(UnsafeUpload, match="'bomb.bin' is damaged .*Bad CRC-32"):
        extract_zip(io.BytesIO(bytes(raw)), tmp_path, max_bytes=1000)
    assert (tmp_path / "bomb.bin").stat().st_size <= 10


def test_not_a_zip_is_a_clear_error(tmp_path: Path):
    with pytest.raises(UnsafeUpload, match="not a valid zip file"):
        extract_zip(io.BytesIO(b"plain text"), tmp_path)


def test_the_zip_must_hold_exactly_one_dataset_file(tmp_path: Path):
    files = extract_zip(_zip({"a.jsonl": b"", "b/b.jsonl": b"", "__MACOSX/c.jsonl": b""}), tmp_path)
    with pytest.raises(
        UnsafeUpload,
        match=r"exactly one dataset file, \.jsonl, \.ndjson, \.csv, \.parquet "
        r"\(found: a.jsonl, b/b.jsonl\)",
    ):
        find_dataset_file(files, tmp_path)


def test_upload_folders_live_in_the_data_dir_and_are_removed(tmp_path: Path):
    with upload_folder(tmp_path) as folder:
        assert folder.parent == tmp_path / "uploads"
        (folder / "x").write_text("x")
    assert not folder.exists()


@pytest.mark.parametrize(
    ("name", "safe"),
    [("../../etc/passwd", "passwd"), ("C:\\Users\\me\\data set.jsonl", "data_set.jsonl"),
     ("..", "upload"), (".hidden.jsonl", "hidden.jsonl")],
)  # fmt: skip
def test_uploaded_names_are_reduced_to_a_safe_base_name(name, safe):
    assert safe_file_name(name) == safe


# --- importing uploads with the CLI's importer ----------------------------------------------


def _item(item_id: str, image: str | None = None, task: str = "OCR") -> str:
    question = [{"type": "image", "image": image}, {"type": "text", "text": "What does it say?"}]
    return json.dumps(
        {
            "item_id": item_id,
            "benchmark": "alignmmbench",
            "task": task,
            "question": question if image else "What does it say?",
            "responses": [{"response_id": f"{item_id}/m1", "model": "m1", "content": "Hello"}],
        }  # fmt: skip
    )


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "white").save(buffer, format="PNG")
    return buffer.getvalue()


def _counts(engine) -> tuple[int, int, int]:
    with session_scope(engine) as session:
        return tuple(
            session.exec(select(func.count()).select_from(table)).one()
            for table in (Dataset, Item, Response)
        )


@pytest.fixture
def admin(engine):
    with session_scope(engine) as session:
        return add_people(session)


def test_a_jsonl_upload_is_imported_and_audited(engine, admin):
    data = ("\n".join([_item("a-1"), _item("a-2")]) + "\n").encode()
    with session_scope(engine) as session:
        summary = import_dataset_upload(session, admin["root"], "My Set.jsonl", data)
    assert (summary.dataset, summary.items_added, summary.responses_added) == ("My_Set", 2, 2)
    with session_scope(engine) as session:
        actions = [event.action for event in list_events(session)]
    assert actions[:2] == ["dataset.upload", "dataset.import"]


@pytest.mark.parametrize("suffix", [".ndjson", ".json"])
def test_the_page_takes_every_json_lines_name_the_command_takes(
    engine, admin, tmp_path, suffix: str
) -> None:
    """One reader: ``critiquelab import jsonl`` reads .json and .ndjson as JSON Lines, and so
    does the upload; a zip's .json files are metadata beside its one dataset file."""
    line = (_item("n-1") + "\n").encode()
    with session_scope(engine) as session:
        summary = import_dataset_upload(session, admin["root"], f"set{suffix}", line)
    assert summary.items_added == 1
    files = extract_zip(_zip({"data.ndjson": line, "info.json": b"{}"}), tmp_path)
    assert find_dataset_file(files, tmp_path).name == "data.ndjson"


def test_a_zip_upload_brings_its_images_into_the_store(engine, admin, tmp_path):
    archive = _zip(
        {"set/data.jsonl": (_item("z-1", "images/one.png") + "\n").encode(),
         "set/images/one.png": _png()}
    )  # fmt: skip
    with session_scope(engine) as session:
        summary = import_dataset_upload(
            session, admin["root"], "set.zip", archive.getvalue(), dataset="zipped"
        )
    assert (summary.dataset, summary.images_stored) == ("zipped", 1)
    with session_scope(engine) as session:
        question = session.exec(select(Item.question)).one()
    stored = question[0]["image"]
    assert resolve_image(stored).read_bytes() == _png()
    assert list((tmp_path / "data" / "uploads").iterdir()) == []


@pytest.mark.parametrize(
    ("name", "data", "error", "message"),
    [
        ("bad.jsonl", None, UploadRejected, r"^bad\.jsonl:2: `task` is 'Dancing'"),
        ("notjson.jsonl", b'{"item_id": \n', UploadRejected, r"^notjson\.jsonl:1: not valid JSON"),
        ("set.zip", "missing-image", UploadRejected, r"^data\.jsonl:1: `question\[0\]\.image`"),
        ("evil.zip", "slip", UnsafeUpload, "points outside the archive"),
        (
            "data.txt",
            b"a,b",
            UnsafeUpload,
            r"'data\.txt' is not \.jsonl, \.ndjson, \.json, \.csv, \.parquet or \.zip",
        ),
    ],
)
def test_a_bad_upload_names_the_line_and_changes_nothing(engine, admin, name, data, error, message):
    if data is None:
        data = (_item("ok-1") + "\n" + _item("bad-2", task="Dancing") + "\n").encode()
    elif data == "missing-image":
        data = _zip({"data.jsonl": (_item("m-1", "images/nowhere.png") + "\n").encode()}).getvalue()
    elif data == "slip":
        data = _zip({"data.jsonl": _item("s-1").encode(), "../x.png": b"x"}).getvalue()
    before = _counts(engine)
    with session_scope(engine) as session:
        events = len(list_events(session))
    with session_scope(engine) as session, pytest.raises(error, match=message) as raised:
        import_dataset_upload(session, admin["root"], name, data)
    assert "upload-" not in str(raised.value)  # no temp folder paths in the message
    assert _counts(engine) == before
    with session_scope(engine) as session:
        assert len(list_events(session)) == events


@pytest.mark.parametrize("actor", ["ann", "rita"])
def test_only_admins_may_upload(engine, admin, actor):
    with session_scope(engine) as session, pytest.raises(PermissionDenied):
        import_dataset_upload(session, admin[actor], "a.jsonl", _item("a-1").encode())
    with session_scope(engine) as session, pytest.raises(PermissionDenied):
        import_judgements_upload(session, admin[actor], "j.jsonl", _judgement("a-1/m1", 5).encode())
    assert _counts(engine) == (0, 0, 0)
    with session_scope(engine) as session:
        assert session.exec(select(Judgement)).all() == []


def _judgement(response_id: str, score: object) -> str:
    return json.dumps(
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "alignmmbench",
         "response_id": response_id, "score": score, "rationale": "r", "raw_output": f"[[{score}]]",
         "parse_status": "ok", "prompt_id": "alignmmbench-en@1"}
    )  # fmt: skip


def test_a_judgements_upload_is_imported_and_a_bad_one_changes_nothing(engine, admin):
    with session_scope(engine) as session:
        import_dataset_upload(session, admin["root"], "set.jsonl", _item("j-1").encode())
    good = (_judgement("j-1/m1", 7) + "\n").encode()
    with session_scope(engine) as session:
        summary = import_judgements_upload(session, admin["root"], "gpt4.jsonl", good)
    assert summary.added == 1
    bad = (_judgement("j-1/m1", 8) + "\n" + _judgement("j-1/m1", 11) + "\n").encode()
    with session_scope(engine) as session, pytest.raises(UploadRejected, match=r"^gpt4b\.jsonl:"):
        import_judgements_upload(session, admin["root"], "gpt4b.jsonl", bad, update=True)
    with session_scope(engine) as session:
        assert session.exec(select(Judgement.score)).all() == [7]
        actions = [event.action for event in list_events(session, action_prefix="judgement.")]
    assert actions == ["judgement.upload", "judgement.import"]
