"""``critiquelab answers``: reject with a comment, list with the state, accept and reopen, and
exit 2 with one clear line on bad input (no comment, unknown answer, slot taken, not a reviewer)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from sqlmodel import col, select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data import queue
from data.storage.engine import make_engine, session_scope
from schemas.tables import AuditEvent, Campaign, User

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data"))
from importing_fixtures import item_record, make_image, write_jsonl  # noqa: E402

runner = CliRunner()
RATIONALE = "The answer counts the cats right and says so plainly."


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_sqlite_template: Path) -> list[str]:
    """A campaign of one item with two responses (two units), K = 1, each answered once."""
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    shutil.copyfile(empty_sqlite_template, tmp_path / "cli.db")  # migrated already
    args = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    make_image(tmp_path / "images" / "cat.png")
    items = write_jsonl(tmp_path / "items.jsonl", [item_record(0, models=2)])
    assert runner.invoke(app, [*args, "import", "jsonl", str(items)]).exit_code == 0
    create = ["campaign", "create", "c", "--dataset", "items", "--protocol", "alignmmbench"]
    assert runner.invoke(app, [*args, *create, "--overlap", "1"]).exit_code == 0
    for name, role in (("ann", "annotator"), ("bob", "annotator"), ("cat", "annotator")):
        added = runner.invoke(
            app, [*args, "users", "add", name, "--role", role], input="pw-1234567\n"
        )
        assert added.exit_code == 0, added.output
    added = runner.invoke(
        app, [*args, "users", "add", "rita", "--role", "reviewer"], input="pw-1234567\n"
    )
    assert added.exit_code == 0, added.output
    engine = make_engine(args[1])
    with session_scope(engine) as session:
        campaign = session.exec(select(Campaign)).one()
        for name in ("ann", "bob"):
            user = session.exec(select(User).where(User.name == name)).one()
            view = queue.next_unit(session, campaign.id, user.id)  # type: ignore[arg-type]
            assert view is not None
            queue.submit(session, view.assignment_id, user.id, score=7, rationale=RATIONALE)  # type: ignore[arg-type]
    engine.dispose()
    return args


def _list(db: list[str], annotator: str) -> list[dict]:
    listed = runner.invoke(app, [*db, "--json", "answers", "list", "-c", "c", "-a", annotator])
    assert listed.exit_code == 0, listed.output
    return json.loads(listed.stdout)


def test_reject_list_accept_and_reopen(db: list[str]) -> None:
    [answer] = _list(db, "ann")
    assert answer["state"] == "pending"
    answer_id = str(answer["annotation_id"])
    done = runner.invoke(
        app, [*db, "answers", "reject", answer_id, "--comment", "Count again.", "--by", "rita"]
    )
    assert done.exit_code == 0, done.output
    assert done.stdout == (
        f"answer {answer_id} (ann, revision 1, campaign 'c') is rejected; it is out of the "
        "reference\n"
    )
    [rejected] = _list(db, "ann")
    assert (rejected["state"], rejected["comment"], rejected["decided_by"]) == (
        "rejected",
        "Count again.",
        "rita",
    )
    table = runner.invoke(
        app, [*db, "answers", "list", "-c", "c", "-a", "ann", "--state", "rejected"]
    )
    assert table.stdout.splitlines()[1].endswith("\trejected\tCount again.")
    accepted = runner.invoke(app, [*db, "answers", "accept", answer_id])
    assert accepted.exit_code == 0 and "is accepted; it counts in the reference" in accepted.stdout
    reopened = runner.invoke(app, [*db, "answers", "reopen", answer_id])
    assert reopened.exit_code == 0 and "is pending" in reopened.stdout
    engine = make_engine(db[1])
    with session_scope(engine) as session:
        events = session.exec(
            select(AuditEvent.action, AuditEvent.actor_id)
            .where(col(AuditEvent.action).like("answer.%"))
            .order_by(col(AuditEvent.id))
        ).all()
        rita = session.exec(select(User).where(User.name == "rita")).one()
    engine.dispose()
    assert events == [
        ("answer.reject", rita.id),
        ("answer.accept", None),
        ("answer.reopen", None),
    ]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["reject", "{id}", "--comment", "  "], "error: a rejection needs a comment"),
        (["reject", "999", "--comment", "no"], "error: there is no answer with id 999"),
        (["accept", "{id}", "--by", "ann"], "error: ann is annotator; only reviewer or admin"),
        (["accept", "{id}", "--by", "nobody"], "error: no account called 'nobody'"),
        (["reopen", "{id}"], "error: answer {id} has no decision to undo"),
    ],
)
def test_bad_input_exits_2_with_one_line(db: list[str], command: list[str], message: str) -> None:
    answer_id = str(_list(db, "ann")[0]["annotation_id"])
    result = runner.invoke(app, [*db, "answers", *(c.format(id=answer_id) for c in command)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message.format(id=answer_id))
    assert len(result.stderr.splitlines()) == 1


def test_undoing_a_rejection_after_the_slot_was_refilled_exits_2(db: list[str]) -> None:
    answer_id = str(_list(db, "ann")[0]["annotation_id"])
    assert (
        runner.invoke(app, [*db, "answers", "reject", answer_id, "--comment", "No."]).exit_code == 0
    )
    engine = make_engine(db[1])
    with session_scope(engine) as session:
        campaign = session.exec(select(Campaign)).one()
        cat = session.exec(select(User).where(User.name == "cat")).one()
        assert queue.next_unit(session, campaign.id, cat.id) is not None  # type: ignore[arg-type]
    engine.dispose()
    refused = runner.invoke(app, [*db, "answers", "reopen", answer_id])
    assert refused.exit_code == 2
    assert "it stays rejected (reject another answer of the unit first" in refused.stderr
    assert _list(db, "ann")[0]["state"] == "rejected"
