"""The Monitor's live figures read what calibration reads (issue 24 §5, §6): no answer a reviewer
rejected in the agreement so far, the Annotators table, the low-effort report and the progress;
annotators held or retired in the campaign marked excluded in the Annotators table, as
``calibrate --json`` marks them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from annotate_app import calibration_worker, monitor_views
from annotate_app.auth import USER_KEY
from annotate_app.campaign_calibration import (
    calibrate_campaign,
    campaign_annotators,
    task_agreement,
    with_shortcut_baseline_source,
)
from annotate_app.cli.main import app
from annotate_app.navigation import APP_DIR
from calibration import CalibrationOptions
from calibration.shortcut import SHORTCUT_JUDGE
from data.readmodels.campaign_input import read_calibration_input
from data.services.campaign_progress import campaign_progress
from data.services.gold import change_standing
from data.services.monitor import human_rating_matrices, low_effort_report
from data.services.users import create_user, to_record
from data.storage.engine import session_scope
from tests.annotate_app.test_reference_exclusions import _annotated_campaign

runner = CliRunner()


def test_monitor_queries_leave_rejected_answers_out(engine: Engine) -> None:
    campaign_id, _, rejected_unit = _annotated_campaign(engine)
    with session_scope(engine) as session:
        [matrix] = human_rating_matrices(session, campaign_id).values()
        progress = campaign_progress(session, campaign_id)
        effort = low_effort_report(session, campaign_id)
    ann2 = matrix.values[matrix.annotators.index("ann2")]
    assert int((~np.isnan(ann2)).sum()) == 5  # 6 units, one answer rejected
    by_name = {a.annotator: a for a in progress.by_annotator}
    assert (by_name["ann2"].submitted, by_name["ann2"].rejected) == (5, 1)
    assert by_name["ann3"].rejected == 0
    assert progress.annotations == 29
    # the rejected answer gave its slot back: its unit has 4 of 5 answers
    assert progress.units_complete == 5
    [unit] = [u for u in progress.by_unit if u.unit_id == rejected_unit]
    assert unit.submitted == 4
    assert {a.annotator: a.answers for a in effort.annotators}["ann2"] == 5


def test_monitor_annotators_match_calibrate_json(engine: Engine, db_url: str, tmp_path: Path):
    campaign_id, _, _ = _annotated_campaign(engine)
    out = tmp_path / "out.json"
    command = ["--db", db_url, "calibrate", "--campaign", "camp-alignmmbench", "--bootstrap", "0"]
    result = runner.invoke(app, [*command, "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text("utf-8"))["annotators"]["rows"]
    expected = {row["annotator"].removeprefix("annotator:"): row for row in rows}
    table = campaign_annotators(engine, campaign_id, bootstrap=0)
    assert table is not None
    live = {row.annotator: row for row in table.rows}
    assert sorted(live) == sorted(expected)
    for name, row in live.items():
        assert row.n == expected[name]["n"], name
        assert row.excluded == expected[name]["excluded"], name
        assert np.isclose(row.mae.value, expected[name]["mae"]["value"]), name  # type: ignore[union-attr]
    assert [name for name, row in live.items() if row.excluded] == ["ann0", "ann1"]
    # agreement so far: held and retired annotators left out, as the human ceiling does
    [agreement] = task_agreement(engine, campaign_id)
    assert agreement.annotators == 3
    alpha = json.loads(out.read_text("utf-8"))["human"]["alpha_interval"]
    assert agreement.alpha_text == f"{alpha:.3f}"


def test_monitor_page_marks_held_and_retired_annotators_excluded(
    engine: Engine, db_url: str, monkeypatch
) -> None:
    _annotated_campaign(engine)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        admin = to_record(create_user(session, "root", "a long password 123", "admin"))
    at = AppTest.from_file(str(APP_DIR / "pages/admin_monitor.py"), default_timeout=120)
    at.session_state[USER_KEY] = admin
    at.run()
    assert not at.exception, at.exception
    assert [m.value for m in at.metric][:2] == ["5 / 6", "29"]
    table = next(d.value for d in at.dataframe if "Longest run" in d.value.columns)
    assert list(table["Annotator"]) == [
        "ann0 (excluded: held)",
        "ann1 (excluded: retired)",
        "ann2",
        "ann3",
        "ann4",
    ]
    assert list(table["Submitted"]) == [6, 6, 5, 6, 6]
    assert list(table["Rejected"]) == [0, 0, 1, 0, 0]
    assert list(table["Units"]) == [6, 6, 5, 6, 6]


def test_the_monitor_measures_the_annotators_in_the_worker_once_per_version(
    engine: Engine, db_url: str, monkeypatch
) -> None:
    """The Annotators table's bootstrap runs in the calibration worker, never in the app's
    process (where it held the GIL the annotators' submits wait for), and once per version of
    the campaign: a rerun reuses it, a release of a held annotator recomputes it."""
    campaign_id, _, _ = _annotated_campaign(engine)

    def refuse(*args, **kwargs):
        raise AssertionError("the Annotators table was computed in the app's process")

    monkeypatch.setattr("annotate_app.campaign_calibration.annotator_reliability", refuse)
    asked = []

    def counted(url: str, campaign: int):
        asked.append(campaign)
        return calibration_worker.page_annotators(url, campaign)

    monkeypatch.setattr(monitor_views, "page_annotators", counted)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        admin = to_record(create_user(session, "root", "a long password 123", "admin"))
    at = AppTest.from_file(str(APP_DIR / "pages/admin_monitor.py"), default_timeout=120)
    at.session_state[USER_KEY] = admin

    def annotators_shown() -> list[str]:
        at.run()
        assert not at.exception, at.exception
        table = next(d.value for d in at.dataframe if "Longest run" in d.value.columns)
        return list(table["Annotator"])

    try:
        assert annotators_shown()[0] == "ann0 (excluded: held)"
        assert annotators_shown()[0] == "ann0 (excluded: held)"
        assert asked == [campaign_id]  # the rerun read it from the cache
        with session_scope(engine) as session:
            change_standing(session, campaign_id, "ann0", "release")
        assert annotators_shown()[0] == "ann0"
        assert asked == [campaign_id, campaign_id]
    finally:
        calibration_worker.shutdown()


def test_the_monitor_reads_low_effort_and_agreement_in_the_worker_once_per_version(
    engine: Engine, db_url: str, monkeypatch
) -> None:
    """The low-effort report and the alpha per task read every live answer: they are computed in
    the calibration worker, never in the app's process, and once per version of the campaign (a
    rerun reuses them; a release of a held annotator, an audited change, recomputes both)."""
    campaign_id, _, _ = _annotated_campaign(engine)

    def refuse(*args, **kwargs):
        raise AssertionError("computed in the app's process")

    monkeypatch.setattr("data.services.monitor.assess", refuse)  # the low-effort report's work
    monkeypatch.setattr("annotate_app.campaign_calibration.krippendorff_alpha", refuse)
    asked: list[str] = []

    def counted(name: str, compute):  # type: ignore[no-untyped-def]
        def call(url: str, campaign: int):  # type: ignore[no-untyped-def]
            asked.append(name)
            return compute(url, campaign)

        return call

    monkeypatch.setattr(
        monitor_views, "page_effort", counted("effort", calibration_worker.page_effort)
    )
    monkeypatch.setattr(
        monitor_views, "page_agreement", counted("agreement", calibration_worker.page_agreement)
    )
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        admin = to_record(create_user(session, "root", "a long password 123", "admin"))
    at = AppTest.from_file(str(APP_DIR / "pages/admin_monitor.py"), default_timeout=120)
    at.session_state[USER_KEY] = admin

    def shown() -> tuple[list[str], list[str]]:
        at.run()
        assert not at.exception, at.exception
        agreement = next(d.value for d in at.dataframe if "Alpha" in d.value.columns)
        effort = next(d.value for d in at.dataframe if "Flagged answers" in d.value.columns)
        return list(agreement["Alpha"]), list(effort["Annotator"])

    try:
        first = shown()
        assert shown() == first
        assert asked == ["effort", "agreement"]  # the rerun read both from the cache
        with session_scope(engine) as session:
            change_standing(session, campaign_id, "ann0", "release")
        alphas, _ = shown()
        assert asked == ["effort", "agreement"] * 2
        assert alphas != first[0]  # ann0's labels count again once released
    finally:
        calibration_worker.shutdown()


def test_pairs_length_figure_is_read_from_the_responses_on_the_monitor_and_in_calibrate(
    engine: Engine, tmp_path: Path
) -> None:
    # Four items, each one pair: m1's answer and m22's, one character longer ("m22" against
    # "m1"), so B is the longer response of every pair. Five raters; ann answers B on all four,
    # each of the others A on one pair of their own (bob the third, cat the first, rita the
    # second, root the fourth) and B on the rest. ann chose the longer on 4/4; on every pair
    # three of the four others did: 0.75. bob chose it on 3/4; the others on his pairs: 3/4,
    # 3/4, 4/4, 3/4, a mean of 0.8125 (so for cat, rita and root). Four pairs each: no flag.
    answers = {"ann": "BBBB", "bob": "BBAB", "cat": "ABBB", "rita": "BABB", "root": "BBBA"}
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=4, models=("m1", "m22"))
        campaign = add_campaign(session, protocol="pairwise", overlap=5)
        units = units_of(session, campaign.id)
        for name, preferences in answers.items():
            for unit, preference in zip(units, preferences, strict=True):
                answer(session, unit, people[name], preference=preference)
        campaign_id = campaign.id
        source = read_calibration_input(session, campaign_id)
    text = "The answer of {} to question {} is long enough to copy."
    assert source.response_lengths == {
        f"ds-item-{i}/{m}": len(text.format(m, i)) for i in range(4) for m in ("m1", "m22")
    }
    expected = {name: (0.75, 0.8125) for name in answers} | {"ann": (1.0, 0.75)}
    live = campaign_annotators(engine, campaign_id, bootstrap=0)
    assert live is not None
    for row in live.rows:
        length = row.length
        assert length is not None and length.n == 4, row.annotator
        assert (length.share_longer.value, length.others_share) == expected[row.annotator]
        assert not row.flags
    result = calibrate_campaign(engine, source, bootstrap=0).report.result
    assert result.annotators is not None
    for row in result.annotators.rows:
        length = row.length
        assert length is not None, row.annotator
        share, others = expected[row.annotator.removeprefix("annotator:")]
        assert (length.share_longer.value, length.others_share) == (share, others)
    # the shortcut baseline of a pairwise campaign uses the responses read with it: an engine
    # that cannot connect is never asked (it was: every response read a second time)
    unreachable = create_engine(f"sqlite:///{tmp_path / 'no-such-folder' / 'none.db'}")
    options = CalibrationOptions(source.protocol, bootstrap=0)
    with_baseline = with_shortcut_baseline_source(unreachable, source, options)
    baseline = with_baseline.frame[with_baseline.frame["rater"] == SHORTCUT_JUDGE]
    assert set(baseline["unit"]) == set(source.frame["unit"])
