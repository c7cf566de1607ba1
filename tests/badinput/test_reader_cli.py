"""The one reader of dataset and judgement files, end to end through the command line.

Special files (a device, a named pipe, process substitution) are refused before a byte is read;
a file with many bad lines names each (up to 50); a null optional field is the field left out;
and whatever ``export`` writes — text with U+2028, U+2029, U+0085 and CR included — ``calibrate``
and ``judgments import`` read back.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from badinput_checks import copy_database, critiquelab, database_snapshot
from badinput_files import CORPUS
from sqlmodel import select

from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import create_user
from data.storage.engine import make_engine, session_scope
from schemas.tables import Annotation, Dataset, Unit

SCRIPT = Path(sys.executable).with_name("critiquelab")
CALIBRATE = ["calibrate", "--protocol", "alignmmbench", "--bootstrap", "0", "--judgments"]
AUDIT = ["calibrate", "--campaign", "c", "--bootstrap", "0"]
CREATE = ["campaign", "create", "c", "--dataset", "d", "--protocol", "score", "--scale", "1:5"]
AWKWARD = 'line\u2028separator\u2029paragraph\u0085next\rreturn\r\nand a "quote", too'
"""Text that ``str.splitlines()`` would cut four times and CSV must quote."""


def _judgement(response_id: str, score: int | None, **fields: object) -> dict[str, object]:
    line: dict[str, object] = {
        "judge": "gpt-4", "judge_kind": "model", "protocol": "alignmmbench",
        "response_id": response_id, "score": score, "prompt_id": "alignmmbench-en@1",
    }  # fmt: skip
    return line | fields


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


PIPE = "{pipe}"
"""Stands for a named pipe nobody writes to (made for the test)."""
SUBSTITUTED = "{substituted}"
"""Stands for ``<(cat valid_dataset.jsonl)``: ``/dev/fd/N``, the read end of a pipe."""


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["import", "jsonl", "/dev/zero"], "a device"),
        (["import", "mmie", "/dev/zero"], "a device"),
        (["judgments", "import", "/dev/zero"], "a device"),
        ([*CALIBRATE, "/dev/zero"], "a device"),
        (["import", "jsonl", PIPE], "a pipe"),
        (["import", "jsonl", SUBSTITUTED], "a pipe"),
        ([*CALIBRATE, "valid_judgments.jsonl", "--dataset", SUBSTITUTED], "a pipe"),
        # the small files given to options: MemoryError (/dev/zero) or a hang (a pipe) before
        ([*AUDIT, "--prices", "/dev/zero"], "a device"),
        ([*AUDIT, "--families", "/dev/zero"], "a device"),
        ([*AUDIT, "--families", PIPE], "a pipe"),
        ([*AUDIT, "--prices", PIPE], "a pipe"),
        ([*CREATE, "--instructions", "/dev/zero"], "a device"),
        ([*CREATE, "--instructions", PIPE], "a pipe"),
    ],
)  # fmt: skip
def test_special_files_are_refused(
    argv: list[str], what: str, isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """They hung at 100% CPU (/dev/zero), grew without bound (mmie), blocked (a named pipe
    nobody writes to) or made an empty dataset named ``63`` (``<(cat f)``).

    In-process: ``<(cat f)`` is what bash hands the command, ``/dev/fd/N`` naming the read end
    of a pipe that ``cat`` writes the file into; here the test writes the file into a pipe of
    its own. ``test_process_substitution_in_a_real_shell`` runs the real thing once."""
    fifo = isolated["tmp"] / "pipe.jsonl"
    os.mkfifo(fifo)
    read_end, write_end = os.pipe()
    os.write(write_end, (CORPUS / "valid_dataset.jsonl").read_bytes())  # under a pipe's 64 KiB
    os.close(write_end)
    substituted = f"/dev/fd/{read_end}"
    assert stat.S_ISFIFO(os.stat(substituted).st_mode)  # what the reader sees from bash's <(...)
    places = {PIPE: str(fifo), SUBSTITUTED: substituted}
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    engine = make_engine(db_url)
    before = database_snapshot(engine)
    try:
        code, _, err = critiquelab(db_url, [places.get(arg, arg) for arg in argv])
    finally:
        os.close(read_end)
    assert code == 2, err
    assert f"is {what}, not a regular file: save the data to a file" in err
    assert len(err.strip().splitlines()) == 1, err
    assert database_snapshot(engine) == before
    with session_scope(engine) as session:
        assert session.exec(select(Dataset)).all() == []
    engine.dispose()


@pytest.mark.slow  # a process of its own: bash, then the installed console script
def test_process_substitution_in_a_real_shell(
    isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """``critiquelab import jsonl <(cat f)`` typed in bash: refused as a pipe, nothing made (it
    made an empty dataset named ``63``, after the file descriptor)."""
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    engine = make_engine(db_url)
    before = database_snapshot(engine)
    command = f"{SCRIPT} --db {db_url} import jsonl <(cat valid_dataset.jsonl)"
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=60,
        cwd=isolated["root"],
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "is a pipe, not a regular file: save the data to a file" in done.stderr
    assert "/dev/fd/" in done.stderr  # bash's name for the substituted file
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert database_snapshot(engine) == before
    with session_scope(engine) as session:
        assert session.exec(select(Dataset)).all() == []
    engine.dispose()


@pytest.mark.parametrize("command", [["judgments", "import"], CALIBRATE])
def test_every_bad_line_is_named_up_to_fifty(
    command: list[str], isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """The CLI named only the first bad line; now each, one per stderr line, and it says when it
    stopped."""
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    code, _, err = critiquelab(db_url, ["import", "jsonl", "valid_dataset.jsonl"])
    assert code == 0, err
    lines = [_judgement("v-1/m1", 8)] + [_judgement(f"v-{n}/m1", True) for n in range(2, 70)]
    path = _write(isolated["tmp"] / "many.jsonl", lines)
    code, _, err = critiquelab(db_url, [*command, str(path)])
    assert code == 2
    messages = err.strip().splitlines()
    assert messages[:2] == [
        f"error: {path}:2: `score` is True (bool), but it must be a number (or null)",
        f"error: {path}:3: `score` is True (bool), but it must be a number (or null)",
    ]
    assert len(messages) == 51 and messages[49].startswith(f"error: {path}:51: `score`")
    assert messages[50] == (
        f"error: {path}: stopped after 50 problems; fix these and check the file again"
    )


def test_null_optional_fields_are_fields_left_out(
    isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """``"rationale": null`` made both commands exit 2 ("Input should be a valid string")."""
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    code, _, err = critiquelab(db_url, ["import", "jsonl", "valid_dataset.jsonl"])
    assert code == 0, err
    nulls = {"rationale": None, "raw_output": None, "created_at": None, "expected_score": None,
             "meta": None, "shown": None, "parse_status": None}  # fmt: skip
    model = [_judgement("v-1/m1", 8, **nulls), _judgement("v-2/m1", None, **nulls)]
    humans = [
        _judgement(rid, score, judge=f"annotator:{name}", judge_kind="human", **nulls)
        for name in ("ann", "bob") for rid, score in (("v-1/m1", 7), ("v-2/m1", 3))
    ]  # fmt: skip
    path = _write(isolated["tmp"] / "nulls.jsonl", model + humans)
    code, out, err = critiquelab(db_url, ["--json", *CALIBRATE, str(path)])
    assert code == 0, err
    judge = json.loads(out)["judges"]["gpt-4"]
    assert (judge["n"], judge["parse_status"]) == (1, {"ok": 1, "unparsed": 1}), judge
    code, _, err = critiquelab(db_url, ["judgments", "import", str(_write(path, model))])
    assert code == 0, err
    sampled = _judgement("v-1/m1", 8, judge="sampler", meta={"sample": None})
    code, _, err = critiquelab(db_url, ["judgments", "import", str(_write(path, [sampled]))])
    assert code == 0, err  # `meta.sample: null` was "missing, but it must be a whole number"


def test_a_byte_order_mark_before_json_lines_is_skipped_as_before_csv(
    isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """Editors on Windows start a UTF-8 file with a BOM: line 1 was "not valid JSON"."""
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    marked = isolated["tmp"] / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + Path("valid_dataset.jsonl").read_bytes())
    code, out, err = critiquelab(db_url, ["import", "jsonl", str(marked), "--images-root", "."])
    assert code == 0, err


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "parquet"])
def test_what_export_writes_calibrate_and_import_read_back(
    export_format: str, isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """A rationale with U+2028 was exported raw and ``calibrate --judgments`` could not read it
    (it split lines with ``str.splitlines()``)."""
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    code, _, err = critiquelab(db_url, ["import", "jsonl", "valid_dataset.jsonl"])
    assert code == 0, err
    engine = make_engine(db_url)
    with session_scope(engine) as session:
        campaign = create_campaign(
            session, CampaignSpec("c", "valid_dataset", "alignmmbench", overlap=2)
        )
        people = [create_user(session, name, "password1", "annotator") for name in ("ann", "bob")]
        for unit in session.exec(select(Unit).where(Unit.campaign_id == campaign.id)):
            for k, person in enumerate(people):
                session.add(Annotation(
                    campaign_id=campaign.id, unit_id=unit.id, annotator_id=person.id,
                    score=5 + k, rationale=f"{AWKWARD} {k}", seconds=3.0,
                ))  # fmt: skip
    model = [_judgement(rid, 6, rationale=AWKWARD, raw_output=AWKWARD)
             for rid in ("v-1/m1", "v-1/m2", "v-2/m1")]  # fmt: skip
    code, _, err = critiquelab(
        db_url, ["judgments", "import", str(_write(isolated["tmp"] / "m.jsonl", model))]
    )
    assert code == 0, err
    humans = isolated["tmp"] / f"humans.{export_format}"
    models = isolated["tmp"] / f"models.{export_format}"
    for argv in (["annotations", "--campaign", "c"], ["judgments"]):
        out = humans if argv[0] == "annotations" else models
        code, _, err = critiquelab(db_url, ["export", *argv, "-o", str(out)])
        assert code == 0, err
    code, out, err = critiquelab(
        db_url, ["--json", *CALIBRATE, str(humans), "--judgments", str(models)]
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["judges"]["gpt-4"]["n"] == 3
    assert summary["human"]["n_annotators"] == 2
    fresh = copy_database(empty_sqlite_template, isolated["tmp"])
    assert critiquelab(fresh, ["import", "jsonl", "valid_dataset.jsonl"])[0] == 0
    code, _, err = critiquelab(fresh, ["judgments", "import", str(models)])
    assert code == 0, err
    again = isolated["tmp"] / f"again.{export_format}"
    assert critiquelab(fresh, ["export", "judgments", "-o", str(again)])[0] == 0
    if export_format == "jsonl":  # the text came through unchanged
        rows = [json.loads(row) for row in again.read_bytes().split(b"\n") if row]
        assert [row["rationale"] for row in rows] == [AWKWARD] * 3
    engine.dispose()


def test_only_the_projects_own_input_errors_exit_2() -> None:
    """A ``ValueError`` from inside pandas is a failure (exit 1), not "bad input" (exit 2)."""
    import pandas as pd

    from annotate_app.cli.main import _is_bad_input
    from data.io.importers import InvalidRecord
    from schemas.protocols import parse_scale

    with pytest.raises(ValueError) as from_pandas:
        pd.DataFrame({"a": [1]}).merge(pd.DataFrame({"a": [1]}), how="sideways")  # type: ignore[call-overload]
    with pytest.raises(ValueError) as from_project:
        parse_scale("1:x")
    assert not _is_bad_input(from_pandas.value)
    assert _is_bad_input(from_project.value)
    assert _is_bad_input(InvalidRecord("f.jsonl", 2, "score", "bad"))
    assert not _is_bad_input(RuntimeError("a bug"))


def test_calibrate_reads_a_csv_dataset_for_grouping(
    isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """``--dataset`` takes the file types ``import`` takes, through the same reader."""
    import pandas as pd

    items = [json.loads(line) for line in (CORPUS / "valid_dataset.jsonl").read_text().splitlines()]
    columns = ("history", "responses", "pairs", "meta")
    rows = [{k: json.dumps(v) if k in columns else v for k, v in item.items() if k != "question"}
            | {"question": "text"} for item in items]  # fmt: skip
    dataset = isolated["tmp"] / "dataset.csv"
    pd.DataFrame(rows).to_csv(dataset, index=False)
    lines = [
        _judgement(rid, score, judge=judge, judge_kind=kind)
        for judge, kind in (("gpt-4", "model"), ("annotator:a", "human"), ("annotator:b", "human"))
        for rid, score in (("v-1/m1", 7), ("v-1/m2", 4), ("v-2/m1", 9))
    ]  # fmt: skip
    path = _write(isolated["tmp"] / "j.jsonl", lines)
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    code, out, err = critiquelab(
        db_url, ["--json", *CALIBRATE, str(path), "--dataset", str(dataset), "--by", "task"]
    )
    assert code == 0, err
    assert set(json.loads(out)["judges"]["gpt-4"]["by"]["task"]) == {"Description", "Counting"}
