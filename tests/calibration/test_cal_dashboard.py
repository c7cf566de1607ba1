"""The calibration dashboard under AppTest, on the bundled sample project."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from data.frames import campaign_judgement_frame, find_campaign, unit_content
from data.storage import session_scope
from data.users import create_user

TIMEOUT = 120


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The sample project in a fresh database, plus an admin, a reviewer and an annotator."""
    from data.sample.build import build_sample_project
    from data.storage import make_engine, upgrade_database

    folder = tmp_path_factory.mktemp("sample")
    url = f"sqlite:///{folder / 'critiquelab.db'}"
    engine = make_engine(url)
    upgrade_database(engine)
    summary = build_sample_project(engine, data_dir=folder / "data")
    with session_scope(engine) as session:
        users = {
            role: create_user(session, f"cal-{role}", "a long password 123", role)
            for role in ("admin", "reviewer", "annotator")
        }
    yield url, engine, summary, users, folder
    engine.dispose()


def _page(url, user, monkeypatch) -> AppTest:
    """The page, reached from the entry script as the router does."""
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = user
    at.run()
    return at.switch_page("pages/calibration_dashboard.py")


def test_annotators_are_refused(sample, monkeypatch):
    url, _, _, users, _ = sample
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "pages/calibration_dashboard.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = users["annotator"]
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This page is for admin or reviewer accounts; you are logged in as cal-annotator "
        "(annotator)."
    ]


@pytest.mark.parametrize("role", ["admin", "reviewer"])
def test_dashboard_works_on_the_sample_project(sample, monkeypatch, role):
    url, _, summary, users, folder = sample
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
    at = _page(url, users[role], monkeypatch)
    at.run()
    assert not at.exception, at.exception
    assert [c for c in summary.campaigns]  # the sample has campaigns
    assert at.selectbox[0].label == "Campaign"
    assert len(at.get("download_button")) == 2
    assert any(s.value == "Judges against the reference" for s in at.subheader)
    # every campaign of the sample renders, with a grouping and a smaller bootstrap
    for option in at.selectbox[0].options:
        at.selectbox[0].set_value(next(c for c in at.selectbox[0].options if c == option))
        at.number_input[0].set_value(100)
        at.selectbox[1].set_value("task")
        at.run()
        assert not at.exception, (option, at.exception)


def test_disagreement_item_lookup(sample):
    _, engine, summary, _, _ = sample
    with session_scope(engine) as session:
        campaign = find_campaign(session, summary.campaigns[0])
        frame = campaign_judgement_frame(session, campaign.id)
        content = unit_content(session, campaign.id, frame["unit"].iloc[0])
    assert content.item_id == frame["item_id"].iloc[0]
    assert content.responses and json.dumps(content.question, default=str)
