"""``critiquelab annotations import``: human labels made elsewhere become a finished campaign."""

from __future__ import annotations

from pathlib import Path

import pytest
from pairwise_import_items import pairwise_items, write_jsonl
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.services.auth import login
from data.services.users import create_user, hash_password
from schemas.tables import Annotation, Assignment, AuditEvent, Campaign, Unit, User

runner = CliRunner()

ITEMS = pairwise_items(3)


def _label(annotator: str, i: int, preference: str, **extra: object) -> dict:
    return {
        "judge": f"annotator:{annotator}",
        "judge_kind": "human",
        "protocol": "pairwise",
        "pair": [f"q{i}/a", f"q{i}/b"],
        "preference": preference,
        "rationale": f"{annotator} on q{i}",
        **extra,
    }


LABELS = [
    _label("ann1", 0, "A", created_at="2026-11-01T10:00:00Z", seconds=30),
    _label("ann2", 0, "A", shown=["q0/b", "q0/a"], created_at="2026-11-01T09:00:00Z"),
    _label("ann3", 0, "B"),
    _label("ann1", 1, "tie"),
    _label("ann2", 1, "B"),
    _label("ann1", 2, "A"),
]


def _cli(db_url: str, *args: str):
    return runner.invoke(app, ["--db", db_url, *args])


@pytest.fixture
def dataset(engine, db_url, tmp_path) -> Path:
    result = _cli(db_url, "import", "jsonl", str(write_jsonl(tmp_path / "data.jsonl", ITEMS)))
    assert result.exit_code == 0, result.output
    return tmp_path


def _counts(engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            table.__name__: len(session.exec(select(table)).all())
            for table in (Campaign, Unit, Assignment, Annotation, User, AuditEvent)
        }


def test_labels_become_a_closed_campaign_written_as_the_app_writes_it(engine, db_url, dataset):
    result = _cli(db_url, "annotations", "import", str(write_jsonl(dataset / "h.jsonl", LABELS)),
                  "--campaign", "ext")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (
        "campaign 'ext' (closed) of dataset 'data': 3 units, 6 labels by 3 annotators "
        "(3 external accounts added), overlap 3"
    )
    with Session(engine) as session:
        campaign = session.exec(select(Campaign)).one()
        assert (campaign.status, campaign.protocol, campaign.overlap) == ("closed", "pairwise", 3)
        assert campaign.rationale_min == 10  # the shortest rationale, 'ann1 on q0', under 20
        users = {u.id: u for u in session.exec(select(User))}
        assert {u.name for u in users.values()} == {"ann1", "ann2", "ann3"}
        assert all(u.external and not u.active and u.role == "annotator" for u in users.values())
        units = {u.id: u for u in session.exec(select(Unit))}
        assert sorted((u.slots_taken, u.n_submitted) for u in units.values()) == [
            (1, 1), (2, 2), (3, 3),
        ]  # fmt: skip
        first = [
            (users[a.annotator_id].name, a.slot, a.shown_order, a.status)
            for a in session.exec(select(Assignment).order_by(Assignment.unit_id, Assignment.slot))
        ][:3]
        # slots follow the time of each first answer (ann2 answered q0 an hour before ann1)
        assert first[0][:2] == ("ann2", 0) and first[0][2:] == ("BA", "submitted")
        annotations = session.exec(select(Annotation)).all()
        assert all(a.is_live and a.revision == 1 and not a.synthetic for a in annotations)
        by_name = {(users[a.annotator_id].name, a.unit_id): a for a in annotations}
        ann2 = next(a for (n, _), a in by_name.items() if n == "ann2" and a.shown_order == "BA")
        assert ann2.preference == "A"  # canonical order, as the file gives it
        actions = [e.action for e in session.exec(select(AuditEvent).order_by(AuditEvent.id))]
    assert actions[-6:] == ["user.create"] * 3 + [
        "campaign.create", "annotation.import", "campaign.close",
    ]  # fmt: skip


def test_external_accounts_cannot_log_in_even_with_a_password(engine, db_url, dataset):
    _cli(db_url, "annotations", "import", str(write_jsonl(dataset / "h.jsonl", LABELS)),
         "--campaign", "ext")  # fmt: skip
    with Session(engine) as session:
        user = session.exec(select(User).where(User.name == "ann1")).one()
        user.password_hash, user.active = hash_password("a long password 123"), True
        session.add(user)
        session.commit()
    result = login(engine, "ann1", "a long password 123")
    assert result.outcome == "wrong_credentials"


def test_reimport_changes_nothing_and_different_labels_are_refused(engine, db_url, dataset):
    path = write_jsonl(dataset / "h.jsonl", LABELS)
    assert _cli(db_url, "annotations", "import", str(path), "--campaign", "ext").exit_code == 0
    before = _counts(engine)
    again = _cli(db_url, "annotations", "import", str(path), "--campaign", "ext")
    assert again.exit_code == 0, again.output
    assert "already holds these 6 labels: nothing changed" in again.output
    assert _counts(engine) == before
    changed = write_jsonl(dataset / "h2.jsonl", [*LABELS[:-1], _label("ann1", 2, "B")])
    refused = _cli(db_url, "annotations", "import", str(changed), "--campaign", "ext")
    assert refused.exit_code == 2
    assert "campaign 'ext' already holds different imported labels" in refused.output
    assert _counts(engine) == before


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"seconds": 99}, "seconds"),
        ({"created_at": "2026-11-02T10:00:00Z"}, "created_at"),
        ({"source_tool": "potato"}, "meta"),  # an unknown key is kept in meta
    ],
)
def test_a_reimport_that_changes_only_time_or_meta_is_refused_naming_it(
    engine, db_url, dataset, change, field
):
    """It said "nothing changed" and dropped the change."""
    path = write_jsonl(dataset / "h.jsonl", LABELS)
    assert _cli(db_url, "annotations", "import", str(path), "--campaign", "ext").exit_code == 0
    before = _counts(engine)
    changed = write_jsonl(dataset / "h2.jsonl", [{**LABELS[0], **change}, *LABELS[1:]])
    refused = _cli(db_url, "annotations", "import", str(changed), "--campaign", "ext")
    assert refused.exit_code == 2, refused.output
    assert (
        f"campaign 'ext' already holds different imported labels: annotator 'ann1' on "
        f"p:q0/a|q0/b, revision 1 differs in `{field}`" in refused.output
    )
    assert "import these under another campaign name" in refused.output
    assert _counts(engine) == before


def test_a_campaign_collected_in_the_app_is_not_overwritten(engine, db_url, dataset):
    create = _cli(db_url, "campaign", "create", "amb", "--dataset", "data", "--protocol",
                  "pairwise")  # fmt: skip
    assert create.exit_code == 0, create.output
    result = _cli(db_url, "annotations", "import", str(write_jsonl(dataset / "h.jsonl", LABELS)),
                  "--campaign", "amb")  # fmt: skip
    assert result.exit_code == 2
    assert "campaign 'amb' already exists and was collected in the app" in result.output


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({**_label("gpt", 0, "A"), "judge_kind": "model"}, "annotations import loads human"),
        (_label("ann1", 7, "A"), "`pair` names 'q7/a', which is not in the database"),
        ({**_label("ann1", 0, "A"), "pair": ["q0/b", "q0/a"]}, "stored in the other order"),
        ({**_label("ann1", 0, "A"), "pair": ["q0/a", "q1/b"]}, "two different items"),
        ({**_label("ann3", 2, "A"), "preference": None}, "a human label needs a `preference`"),
        (_label("ann 1", 0, "A"), "annotator name 'ann 1' must be"),
        (_label("ann2", 1, "A"), "duplicate judgement (same judge, prompt_id, unit, shown"),
        (
            {
                "judge": "annotator:ann1",
                "judge_kind": "human",
                "protocol": "alignmmbench",
                "response_id": "q0/a",
                "score": 5,
            },
            "`protocol` is 'alignmmbench', but the file's first line says 'pairwise'",
        ),
        (
            _label("ann2", 1, "A", shown=["q1/b", "q1/a"]),
            "annotator 'ann2' labelled pair q1/a | q1/b again (first at line 5): give every",
        ),
        # both exited 1 with an OverflowError (no date is that far from the label's time)
        (_label("ann3", 1, "A", seconds=1e12), "`seconds` is 1000000000000.0: at most"),
        (
            _label("ann3", 1, "A", created_at="9999-12-31T23:59:59Z"),
            "`created_at` is 9999-12-31T23:59:59+00:00: a label is made between 1970",
        ),
        (_label("ann3", 1, "A", created_at="0001-01-01T00:00:00Z"), "between 1970-01-01 and"),
        # "yes" was dropped and the label stored as a real one
        (_label("ann3", 1, "A", meta={"synthetic": "yes"}), "`meta.synthetic` is 'yes', but it"),
    ],
)
def test_bad_lines_exit_2_naming_file_and_line_and_nothing_is_written(
    engine, db_url, dataset, line, message
):
    path = write_jsonl(dataset / "bad.jsonl", [*LABELS, line])
    before = _counts(engine)
    result = _cli(db_url, "annotations", "import", str(path), "--campaign", "ext")
    assert result.exit_code == 2, result.output
    assert f"{path}:7" in result.output and message in result.output
    assert _counts(engine) == before


def test_a_login_account_of_the_same_name_is_refused(engine, db_url, dataset):
    with Session(engine) as session:
        create_user(session, "ann3", "a long password 123", "annotator")
        session.commit()
    result = _cli(db_url, "annotations", "import", str(write_jsonl(dataset / "h.jsonl", LABELS)),
                  "--campaign", "ext")  # fmt: skip
    assert result.exit_code == 2
    assert "annotator 'ann3' is the name of an account that logs in here" in result.output


def test_units_outside_the_named_dataset_are_refused(engine, db_url, dataset):
    other = [{**ITEMS[0], "item_id": "z", "responses": [
        {"response_id": "z/a", "model": "m1", "content": "x"}], "pairs": []}]  # fmt: skip
    other_file = write_jsonl(dataset / "other.jsonl", other)
    assert _cli(db_url, "import", "jsonl", str(other_file)).exit_code == 0
    result = _cli(db_url, "annotations", "import", str(write_jsonl(dataset / "h.jsonl", LABELS)),
                  "--campaign", "ext", "--dataset", "other")  # fmt: skip
    assert result.exit_code == 2
    assert "'q0/a' belongs to dataset 'data', not 'other'" in result.output


def test_units_of_two_datasets_name_the_line_that_changes_dataset(engine, db_url, dataset):
    """The message named no file or line: the first line in another dataset than line 1's."""
    other = [{**ITEMS[0], "item_id": "z", "responses": [
        {"response_id": "z/a", "model": "m1", "content": "x"},
        {"response_id": "z/b", "model": "m2", "content": "y"}],
        "pairs": [["z/a", "z/b"]]}]  # fmt: skip
    assert (
        _cli(db_url, "import", "jsonl", str(write_jsonl(dataset / "z.jsonl", other))).exit_code == 0
    )
    mixed = [*LABELS, {**_label("ann1", 0, "A"), "pair": ["z/a", "z/b"]}]
    path = write_jsonl(dataset / "mixed.jsonl", mixed)
    before = _counts(engine)
    result = _cli(db_url, "annotations", "import", str(path), "--campaign", "ext")
    assert result.exit_code == 2
    assert f"{path}:7: this unit belongs to dataset 'z', the one of line 1 to 'data'" in (
        result.output
    )
    assert _counts(engine) == before


def test_revisions_round_trip_through_export(engine, db_url, dataset):
    revised = [
        *LABELS[1:],
        {**LABELS[0], "revision": 1},
        {**LABELS[0], "revision": 2, "preference": "tie", "rationale": "on reflection a tie",
         "created_at": "2026-11-01T11:00:00Z"},
    ]  # fmt: skip
    path = write_jsonl(dataset / "h.jsonl", revised)
    assert _cli(db_url, "annotations", "import", str(path), "--campaign", "ext").exit_code == 0
    with Session(engine) as session:
        rows = session.exec(select(Annotation).order_by(col(Annotation.revision))).all()
        first, second = [a for a in rows if a.rationale.startswith(("ann1 on q0", "on reflection"))]
        assert (first.revision, first.is_live, second.revision, second.is_live) == (
            1,
            False,
            2,
            True,
        )
        assert second.meta == {"revises": first.id}
        event = session.exec(
            select(AuditEvent).where(AuditEvent.action == "annotation.revise")
        ).one()
        assert event.detail["before"]["preference"] == "A"
        assert event.detail["after"]["preference"] == "tie"
    out = dataset / "export.jsonl"
    exported = _cli(db_url, "export", "annotations", "--campaign", "ext", "--format", "jsonl",
                    "-o", str(out), "--all-revisions")  # fmt: skip
    assert exported.exit_code == 0, exported.output
    back = _cli(db_url, "annotations", "import", str(out), "--campaign", "ext-copy")
    assert back.exit_code == 0, back.output
    assert "7 labels by 3 annotators (0 external accounts added)" in back.output
    with Session(engine) as session:
        campaigns = {c.name: c.id for c in session.exec(select(Campaign))}

        def labels(name):
            return sorted(
                (a.annotator_id, a.revision, a.is_live, a.preference, a.shown_order, a.rationale)
                for a in session.exec(
                    select(Annotation).where(Annotation.campaign_id == campaigns[name])
                )
            )

        assert labels("ext") == labels("ext-copy")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_csv_and_parquet_exports_import_as_the_same_campaign(engine, db_url, dataset, fmt):
    path = write_jsonl(dataset / "h.jsonl", LABELS)
    assert _cli(db_url, "annotations", "import", str(path), "--campaign", "ext").exit_code == 0
    out = dataset / f"export.{fmt}"
    exported = _cli(db_url, "export", "annotations", "--campaign", "ext", "--format", fmt,
                    "-o", str(out))  # fmt: skip
    assert exported.exit_code == 0, exported.output
    back = _cli(db_url, "annotations", "import", str(out), "--campaign", "copy")
    assert back.exit_code == 0, back.output

    def labels(session: Session, name: str) -> list[tuple]:
        campaign = session.exec(select(Campaign).where(Campaign.name == name)).one()
        rows = session.exec(select(Annotation).where(Annotation.campaign_id == campaign.id))
        return sorted(
            (a.annotator_id, a.revision, a.preference, a.shown_order, a.rationale, a.seconds)
            for a in rows
        )

    with Session(engine) as session:
        assert labels(session, "ext") == labels(session, "copy")


def test_import_and_reimport_on_sqlite_and_postgresql(any_engine, tmp_path):
    from data.io.importers import import_jsonl
    from data.io.importers.annotations import import_annotations
    from data.storage.engine import session_scope

    with session_scope(any_engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS))
    revised = [{**LABELS[3], "revision": 1}, {**LABELS[3], "revision": 2, "preference": "A"}]
    path = write_jsonl(tmp_path / "h.jsonl", [*LABELS[:3], *LABELS[4:], *revised])
    with session_scope(any_engine) as session:
        summary = import_annotations(session, path, campaign="ext")
    assert (summary.units, summary.annotations, summary.overlap) == (3, 7, 3)
    with session_scope(any_engine) as session:
        again = import_annotations(session, path, campaign="ext")
    assert not again.created and _counts(any_engine)["Annotation"] == 7
    with Session(any_engine) as session:
        live = session.exec(select(Annotation).where(col(Annotation.is_live))).all()
        assert len(live) == 6


def test_a_bad_campaign_name_is_refused(engine, db_url, dataset):
    result = _cli(db_url, "annotations", "import", str(write_jsonl(dataset / "h.jsonl", LABELS)),
                  "--campaign", " ext")  # fmt: skip
    assert result.exit_code == 2
    assert "the campaign name ' ext' starts or ends with white space" in result.output
