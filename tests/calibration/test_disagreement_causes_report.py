"""The reviewers' causes on the sample project: the dashboard block, the HTML download and
``calibrate --html`` show the same "Why judges disagree" section."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from annotate_app.auth import USER_KEY
from annotate_app.cli.main import app
from annotate_app.disagreement_review import open_disagreements, report_html
from annotate_app.navigation import APP_DIR
from calibration import CalibrationOptions, calibrate
from data.readmodels.frames import (
    campaign_judgement_frame,
    campaign_judges,
    campaign_reference_overrides,
)
from data.services.disagreements import tag_disagreement
from data.services.users import create_user
from data.storage.campaign_lookup import campaign_protocol, get_campaign, list_campaigns
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

TIMEOUT = 120


@pytest.fixture(scope="module")
def tagged(tmp_path_factory, sample_template):
    """The sample project with three causes tagged on its first campaign's first judge."""
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine, folder = built.url, built.engine, built.folder
        with session_scope(engine) as session:
            reviewer = create_user(session, "cause-rita", "a long password 123", "reviewer")
            campaign = list_campaigns(session)[0]
            judge = campaign_judges(session, campaign.id)[0]
        queue = open_disagreements(engine, reviewer.id, campaign.id, judge, include_tagged=False)
        assert len(queue.entries) >= 3, "the sample's judges disagree with the humans somewhere"
        with session_scope(engine) as session:
            for entry, cause in zip(
                queue.entries, ("too lenient", "too lenient", "other"), strict=False
            ):
                tag_disagreement(session, reviewer.id, entry, cause=cause, note=f"<i>{cause}</i>")
        yield url, engine, reviewer, campaign, judge, folder


def test_the_dashboard_shows_the_causes_per_judge(tagged, monkeypatch):
    url, _, reviewer, campaign, judge, folder = tagged
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = reviewer
    at.run()
    at.switch_page("pages/calibration_dashboard.py").run()
    assert not at.exception, at.exception
    assert "Why judges disagree with the humans" in [s.value for s in at.subheader]
    tables = [t.value for t in at.dataframe if t.value.index.name == "cause"]
    assert tables and tables[0].loc["too lenient", "tagged"] == 2
    assert tables[0].loc["other", "tagged"] == 1


def test_html_download_and_calibrate_html_carry_the_section(tagged, tmp_path):
    url, engine, _, campaign, judge, _ = tagged
    with session_scope(engine) as session:
        found = get_campaign(session, campaign.id)
        frame = campaign_judgement_frame(session, found.id)
        overrides = campaign_reference_overrides(session, found.id)
        options = CalibrationOptions(protocol=campaign_protocol(found), bootstrap=0)
    html = report_html(calibrate(frame, options, overrides=overrides), engine, campaign.id)
    assert "Why judges disagree with the humans" in html
    assert "&lt;i&gt;too lenient&lt;/i&gt;" in html and "<i>too lenient" not in html
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["--db", url, "calibrate", "--campaign", campaign.name, "--bootstrap", "0",
              "--html", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Why judges disagree with the humans" in out.read_text("utf-8")
