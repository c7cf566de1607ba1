"""Hostile files through the upload page (``pages/admin_data.py`` under AppTest): an error on
the page (no exception), the database unchanged, nothing written outside the data folder.

The page hands uploads to the same importers as the command line, so a representative subset of
the corpus is enough here, plus what only the page takes: zip archives (zip-slip, absolute
names, symlink entries). Dataset files go up inside a zip with their ``images/`` folder, so the
image cases are judged on the image, not on its absence.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from badinput_checks import copy_database, critiquelab, database_snapshot, outside_data_folder
from badinput_files import manifest_cases, upload_only_cases, zip_archives
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from data.services.users import create_user
from data.storage.engine import make_engine, session_scope

UPLOAD_CASES = {
    "jsonl_invalid_json.jsonl", "jsonl_invalid_utf8.jsonl", "jsonl_nul_byte.jsonl",
    "jsonl_missing_item_id.jsonl", "jsonl_duplicate_item_id.jsonl", "jsonl_image_dotdot.jsonl",
    "jsonl_image_absolute.jsonl", "jsonl_image_url.jsonl", "jsonl_image_bomb.jsonl",
    "jsonl_image_wrong_extension.jsonl", "jsonl_image_svg_script.jsonl",
    "jsonl_image_truncated.jsonl", "jsonl_huge_line.jsonl", "judg_score_out_of_scale.jsonl",
    "judg_unknown_response.jsonl", "judg_invalid_json.jsonl",
}  # fmt: skip
CASES = [case for case in manifest_cases() if case.file in UPLOAD_CASES]
ZIP_CASES = upload_only_cases()
TIMEOUT = 120


def _zip_with_images(root: Path, file: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(root / file, file)
        for image in (root / "images").iterdir():
            if not image.is_symlink():
                archive.write(image, f"images/{image.name}")
    return buffer.getvalue()


def _admin_db(isolated: dict[str, Path], template: Path, with_dataset: bool):  # type: ignore[no-untyped-def]
    db_url = copy_database(template, isolated["db"])
    if with_dataset:
        code, _, err = critiquelab(db_url, ["import", "jsonl", "valid_dataset.jsonl"])
        assert code == 0, err
    engine = make_engine(db_url)
    with session_scope(engine) as session:
        admin = create_user(session, "root", "correct horse battery", "admin")
    return db_url, engine, admin


def _upload(db_url: str, admin, uploader_key: str, name: str, data: bytes, button: str) -> AppTest:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(APP_DIR / "pages/admin_data.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = admin
    at.run()
    at.file_uploader(key=uploader_key).set_value((name, data, "application/octet-stream"))
    next(b for b in at.button if b.label == button).click()
    return at.run()


def _assert_refused_on_page(at: AppTest, name: str, expected: tuple[str, ...]) -> None:
    assert not at.exception, [e.value for e in at.exception]
    errors = [element.value for element in at.error]
    assert len(errors) == 1 and "Nothing was imported" in errors[0], errors
    assert not at.success, [s.value for s in at.success]
    (problems,) = [element.value for element in at.code]  # plain text, not Markdown
    assert "\\`" not in problems, problems
    lowered = problems.lower()
    assert any(fragment.lower() in lowered for fragment in expected), (expected, problems)


@pytest.mark.parametrize("case", CASES, ids=[case.file for case in CASES])
def test_bad_file_refused_by_upload_page(
    case, isolated: dict[str, Path], empty_sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    judgements = case.command == "judgments import"
    db_url, engine, admin = _admin_db(isolated, empty_sqlite_template, with_dataset=judgements)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    before_db, before_files = database_snapshot(engine), outside_data_folder(isolated)
    if judgements:
        data = (isolated["root"] / case.file).read_bytes()
        at = _upload(db_url, admin, "judgements_file", case.file, data, "Import judgements")
    else:
        data = _zip_with_images(isolated["root"], case.file)
        at = _upload(db_url, admin, "dataset_file", "upload.zip", data, "Import dataset")
    _assert_refused_on_page(at, case.file, case.expected)
    assert database_snapshot(engine) == before_db, "the database changed"
    assert outside_data_folder(isolated) == before_files, "a file was written outside data dir"
    engine.dispose()


@pytest.mark.parametrize(("file", "expected"), ZIP_CASES, ids=[name for name, _ in ZIP_CASES])
def test_hostile_zip_refused_by_upload_page(
    file: str,
    expected: tuple[str, ...],
    isolated: dict[str, Path],
    empty_sqlite_template: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    archives = zip_archives(isolated["db"])
    db_url, engine, admin = _admin_db(isolated, empty_sqlite_template, with_dataset=False)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    before_db, before_files = database_snapshot(engine), outside_data_folder(isolated)
    at = _upload(db_url, admin, "dataset_file", file, archives[file].read_bytes(), "Import dataset")
    _assert_refused_on_page(at, file, expected)
    assert database_snapshot(engine) == before_db, "the database changed"
    assert outside_data_folder(isolated) == before_files, "a file was written outside data dir"
    assert not Path("/tmp/critiquelab-escaped.txt").exists()
    assert not list(isolated["tmp"].rglob("escaped.txt"))
    assert not list(isolated["store"].rglob("*escaped*")), "an entry was unpacked"
    engine.dispose()


def test_valid_zip_is_imported_by_upload_page(
    isolated: dict[str, Path], empty_sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Positive control: the same zip without the hostile entry imports."""
    db_url, engine, admin = _admin_db(isolated, empty_sqlite_template, with_dataset=False)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    data = _zip_with_images(isolated["root"], "valid_dataset.jsonl")
    at = _upload(db_url, admin, "dataset_file", "upload.zip", data, "Import dataset")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.success
    engine.dispose()


@pytest.mark.parametrize("bad_lines", [3, 60])
def test_upload_page_lists_every_bad_line_as_text(
    bad_lines: int,
    isolated: dict[str, Path],
    empty_sqlite_template: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The page showed only the first bad line, its Markdown backticks escaped (\\`score\\`)."""
    db_url, engine, admin = _admin_db(isolated, empty_sqlite_template, with_dataset=True)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    good = (isolated["root"] / "judg_invalid_json.jsonl").read_text("utf-8").splitlines()[0]
    bad = [good.replace('"score": 8', f'"score": "{n}"') for n in range(bad_lines)]
    data = "\n".join([good, *bad]).encode()
    at = _upload(db_url, admin, "judgements_file", "many.jsonl", data, "Import judgements")
    assert not at.exception, [e.value for e in at.exception]
    shown = min(bad_lines, 50)
    heading = f"Nothing was imported: {shown} problems" + (
        " (reading stopped there; there may be more)" if bad_lines > 50 else ""
    )
    assert [e.value for e in at.error] == [
        f"{heading}. Fix each line listed below and upload again."
    ]
    (problems,) = [element.value for element in at.code]
    assert problems.splitlines() == [
        f"many.jsonl:{n + 2}: `score` is '{n}' (str), but it must be a number (or null)"
        for n in range(shown)
    ]
    engine.dispose()
