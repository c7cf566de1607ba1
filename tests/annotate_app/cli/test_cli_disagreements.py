"""``campaign create --disagreement-threshold/--taxonomy`` and ``export disagreement-tags``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.services.disagreements import disagreement_queue, review_settings, tag_disagreement
from data.services.judgements import insert_judgements
from data.storage.campaign_lookup import get_campaign, unit_key_map
from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.disagreements import JudgeDisagreement
from schemas.tables import Judgement

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from admin_factory import add_dataset, add_people, units_of  # noqa: E402

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    engine = make_engine(url)
    upgrade_database(engine)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=2)
    yield ["--db", url], engine, people
    engine.dispose()


def test_create_stores_the_threshold_and_taxonomy(db) -> None:
    args, engine, _ = db
    created = runner.invoke(app, [*args, "campaign", "create", "c", "--dataset", "ds",
                                  "--protocol", "alignmmbench", "--disagreement-threshold", "3",
                                  "--taxonomy", "misread the image, too harsh,other"])  # fmt: skip
    assert created.exit_code == 0, created.output
    with session_scope(engine) as session:
        settings = review_settings(get_campaign(session, "c"))
    assert settings.threshold == 3
    assert settings.taxonomy == ("misread the image", "too harsh", "other")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--protocol", "alignmmbench", "--disagreement-threshold", "12"],
         "error: the disagreement threshold is 12, but it must be more than 0 and at most the "
         "scale's width (9 for integers 1–10) (--disagreement-threshold)\n"),
        (["--protocol", "pairwise", "--pairs", "all", "--disagreement-threshold", "1"],
         "error: a pairwise campaign has no disagreement threshold (a judge either agrees with "
         "the reference label or not): leave it out (--disagreement-threshold)\n"),
        (["--protocol", "alignmmbench", "--taxonomy", "a,,b"],
         "error: the taxonomy has an empty cause: name every cause, e.g. a,b,c (--taxonomy)\n"),
    ],
)  # fmt: skip
def test_bad_settings_exit_2_naming_the_flag_and_create_nothing(db, flags, message) -> None:
    args, engine, _ = db
    result = runner.invoke(app, [*args, "campaign", "create", "c", "--dataset", "ds", *flags])
    assert (result.exit_code, result.stderr) == (2, message)
    listed = runner.invoke(app, [*args, "campaign", "status", "c"])
    assert listed.exit_code == 2  # no campaign 'c'


def test_export_disagreement_tags(db, tmp_path: Path) -> None:
    args, engine, people = db
    created = runner.invoke(app, [*args, "campaign", "create", "c", "--dataset", "ds",
                                  "--protocol", "alignmmbench"])  # fmt: skip
    assert created.exit_code == 0, created.output
    with session_scope(engine) as session:
        campaign = get_campaign(session, "c")
        unit = units_of(session, campaign.id)[0]
        key = unit_key_map(session, campaign.id)[unit.id]
        insert_judgements(session, [Judgement(judge="gpt", protocol="alignmmbench", unit_key=key,
                                              response_pk=unit.response_pk, score=9)])  # fmt: skip
        entry = disagreement_queue(
            session,
            people["rita"],
            campaign.id,
            "gpt",
            [JudgeDisagreement(key, "gpt", "9", "2", 7.0)],
        )[0]
        tag_disagreement(session, people["rita"], entry, cause="too lenient", note="Kind.")
    out = tmp_path / "tags.jsonl"
    exported = runner.invoke(app, [*args, "export", "disagreement-tags", "--campaign", "c",
                                   "-o", str(out)])  # fmt: skip
    assert exported.stdout == f"wrote 1 to {out}\n"
    row = json.loads(out.read_text("utf-8"))
    assert (row["unit_key"], row["judge"], row["cause"], row["note"], row["reviewer"]) == (
        key,
        "gpt",
        "too lenient",
        "Kind.",
        "rita",
    )
    assert (row["judge_value"], row["reference_value"], row["gap"]) == ("9", "2", 7.0)
