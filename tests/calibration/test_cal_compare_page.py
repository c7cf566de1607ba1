"""The calibration page's "Is judge A better than judge B?" picker, under AppTest."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from calibration import CalibrationOptions
from calibration.compare import HUMAN, compare_judges
from calibration.report_compare import comparison_table
from calibration.tables import with_metric_names
from data.readmodels.frames import campaign_judgement_frame, campaign_reference_overrides
from data.services.users import create_user
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

TIMEOUT = 120


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine = built.url, built.engine
        with session_scope(engine) as session:
            reviewer = create_user(session, "cmp-reviewer", "a long password 123", "reviewer")
        yield url, engine, reviewer


def test_picker_shows_the_library_comparison(sample, monkeypatch):
    url, engine, reviewer = sample
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = reviewer
    at.run()
    at = at.switch_page("pages/calibration_dashboard.py")
    at.run()
    assert not at.exception, at.exception
    campaign = at.selectbox[0].value
    at.number_input[0].set_value(100)
    at.run()
    assert any(s.value == "Is judge A better than judge B?" for s in at.subheader)
    side_a, side_b = at.selectbox(key="compare-a"), at.selectbox(key="compare-b")
    judges = [o for o in side_a.options if o != "one more human (leave-one-out)"]
    assert side_b.options[-1] == "one more human (leave-one-out)" and len(judges) >= 2
    side_a.set_value(judges[1])
    side_b.set_value(HUMAN)
    at.run()
    assert not at.exception, at.exception
    with session_scope(engine) as session:
        found = get_campaign(session, campaign.name)
        frame = campaign_judgement_frame(session, found.id)
        overrides = campaign_reference_overrides(session, found.id)
        protocol = campaign_protocol(found)
    options = CalibrationOptions(protocol, bootstrap=100, seed=0)
    expected = with_metric_names(  # the page names metrics in words, as its other tables do
        comparison_table(compare_judges(frame, options, judges[1], HUMAN, overrides=overrides)),
        axis="index",
    )
    (shown,) = [d.value for d in at.dataframe if "95% interval of Δ" in d.value.columns]
    assert list(shown.index) == list(expected.index)
    assert shown["95% interval of Δ"].tolist() == expected["95% interval of Δ"].tolist()
    at.selectbox(key="compare-b").set_value(judges[1])
    at.run()
    assert "Choose two different sides to compare." in [i.value for i in at.info]
