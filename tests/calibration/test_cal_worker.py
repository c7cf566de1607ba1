"""The Calibration page's worker process (annotate_app.calibration_worker): the page's process
never reads a campaign's rows, the worker's answers equal the library's, errors come back."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from annotate_app import calibration_worker
from annotate_app.auth import USER_KEY
from annotate_app.calibration_worker import CampaignScope, campaign_overview, page_calibration
from annotate_app.campaign_calibration import calibrate_campaign, load_campaign
from annotate_app.navigation import APP_DIR
from calibration import CalibrationInputError
from data.readmodels.campaign_input import campaign_version
from data.services.users import create_user
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import read_scope, session_scope
from schemas.tables import Judgement
from tests.calibration.conftest import sample_database

pytestmark = pytest.mark.slow  # calibration worker processes

TIMEOUT = 120
CAMPAIGN = "demo-alignmmbench-finished"


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine = built.url, built.engine
        with session_scope(engine) as session:
            reviewer = create_user(session, "worker-reviewer", "a long password 123", "reviewer")
        yield url, engine, reviewer
        calibration_worker.shutdown()


def _scope(url, engine) -> CampaignScope:
    with read_scope(engine) as session:
        campaign = get_campaign(session, CAMPAIGN)
        return CampaignScope(url, campaign.id, campaign_version(session, campaign.id))


def test_the_page_never_reads_the_campaign_rows_in_its_own_process(sample, monkeypatch):
    """Every read of a campaign's frame in the app's process fails here: the page still shows
    the calibration, its comparison and its audits, which the worker process computed."""
    url, _, reviewer = sample

    def refuse(*args, **kwargs):
        raise AssertionError("the page read a campaign's rows in the app's process")

    for module in (
        "data.readmodels.frames",
        "data.readmodels.campaign_input",
        "annotate_app.audit_views",
    ):
        monkeypatch.setattr(f"{module}.campaign_judgement_frame", refuse, raising=False)
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = reviewer
    at.run()
    at = at.switch_page("pages/calibration_dashboard.py")
    at.run()
    assert not at.exception, at.exception
    at.number_input[0].set_value(100)
    at.run()
    assert not at.exception, at.exception
    titles = [s.value for s in at.subheader]
    assert "Judges against the reference" in titles
    assert "Is judge A better than judge B?" in titles and "Judge bias and cost" in titles


def test_the_worker_answers_as_the_library(sample):
    url, engine, _ = sample
    scope = _scope(url, engine)
    overview = campaign_overview(scope)
    assert overview.campaign == CAMPAIGN and overview.rows > 0
    assert overview.judges == ["synthetic-critic-v0", "synthetic-gpt4-like"]
    report = page_calibration(scope, bootstrap=50, seed=3).report
    expected = calibrate_campaign(
        engine, load_campaign(engine, CAMPAIGN), bootstrap=50, seed=3
    ).report
    assert report.result.to_json() == expected.result.to_json()
    assert report.units is None  # one row per unit: it stays in the worker
    for judge, details in expected.details.items():
        shown = report.details[judge].disagreements
        assert shown["unit"].tolist() == details.disagreements["unit"].tolist()
        assert (
            shown["human_rationales"].tolist() == details.disagreements["human_rationales"].tolist()
        )
        assert all(shown["human_rationales"].map(len))  # the listed units' texts came along
    task = overview.tasks[0]
    narrow = page_calibration(CampaignScope(url, scope.campaign_id, scope.version, (task,)))
    assert narrow.report is not None
    assert narrow.report.result.reference.n_units < report.result.reference.n_units
    nothing = CampaignScope(url, scope.campaign_id, scope.version, models=("no such model",))
    assert page_calibration(nothing, bootstrap=0).report is None


def test_errors_come_back_and_a_dead_worker_is_replaced(sample):
    url, engine, _ = sample
    scope = _scope(url, engine)
    with pytest.raises(CalibrationInputError, match="nope"):
        page_calibration(scope, judges=("nope",), bootstrap=0)
    worker = calibration_worker._WORKER
    assert worker is not None
    worker.process.kill()
    worker.process.wait()
    assert page_calibration(scope, bootstrap=0).report is not None  # a new worker answered
    assert calibration_worker._WORKER is not worker


def test_the_version_changes_with_a_new_judgement(sample):
    url, engine, _ = sample
    before = _scope(url, engine).version
    with session_scope(engine) as session:
        judgement = session.execute(select(Judgement)).scalars().first()
        session.add(
            Judgement(
                judge="another-judge",
                protocol=judgement.protocol,
                unit_key=judgement.unit_key,
                response_pk=judgement.response_pk,
                score=judgement.score,
            )
        )
    assert _scope(url, engine).version != before
