"""The calibration page's judge audits (annotate_app.audit_views), under AppTest on the sample
project: the tables equal the library's, out of the box and with prices and families."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from calibration.audits import audit_judges
from calibration.consistency import cross_protocol_consistency
from calibration.cost import Prices
from calibration.report_audits import bias_table, consistency_table, cost_table
from data.readmodels.frames import campaign_judgement_frame, campaign_reference_overrides
from data.readmodels.judge_facts import campaign_judgement_usage, campaign_response_facts
from data.services.users import create_user
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

TIMEOUT = 180
POINTWISE, PAIRWISE = "demo-alignmmbench-finished", "demo-pairwise-finished"


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine = built.url, built.engine
        with session_scope(engine) as session:
            reviewer = create_user(session, "audit-reviewer", "a long password 123", "reviewer")
        yield url, engine, reviewer


def _library(engine, bootstrap, prices=None, families=None):
    with session_scope(engine) as session:
        pairwise, pointwise = get_campaign(session, PAIRWISE), get_campaign(session, POINTWISE)
        frame = campaign_judgement_frame(session, pairwise.id)
        overrides = campaign_reference_overrides(session, pairwise.id)
        facts = campaign_response_facts(session, pairwise.id)
        usage = campaign_judgement_usage(session, pairwise.id)
        scores = campaign_judgement_frame(session, pointwise.id)
        score_overrides = campaign_reference_overrides(session, pointwise.id)
        protocol, score_protocol = campaign_protocol(pairwise), campaign_protocol(pointwise)
    audit = audit_judges(frame, protocol, facts, usage, overrides=overrides, prices=prices,
                         families=families, bootstrap=bootstrap)  # fmt: skip
    report = cross_protocol_consistency(
        scores, frame, score_protocol, names=(POINTWISE, PAIRWISE), delta=1.0,
        overrides=(score_overrides, overrides), bootstrap=bootstrap,
    )  # fmt: skip
    return audit, report


def _frames(at):
    """The page's tables that AppTest can read back (a categorical confusion table elsewhere on
    the page does not deserialise under pyarrow; it is not one of these)."""
    frames = []
    for element in at.dataframe:
        try:
            frames.append(element.value)
        except TypeError:
            continue
    return frames


def test_audits_show_the_library_tables(sample, monkeypatch):
    url, engine, reviewer = sample
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = reviewer
    at.run()
    at = at.switch_page("pages/calibration_dashboard.py")
    at.run()
    campaigns = at.selectbox[0]
    (pairwise,) = [c for c in campaigns.options if c.startswith(PAIRWISE)]
    campaigns.select(campaigns.options[campaigns.options.index(pairwise)])
    at.run()
    at.number_input[0].set_value(50)  # bootstrap resamples
    at.run()
    assert not at.exception, at.exception
    subheaders = [s.value for s in at.subheader]
    assert "Judge bias and cost" in subheaders
    assert "Scores and preferences: do they agree?" in subheaders
    assert at.selectbox(key="consistency-partner").value.name == POINTWISE  # out of the box
    audit, report = _library(engine, 50)
    frames = _frames(at)
    shown = next(f for f in frames if "inconsistent pairs" in f.columns)
    assert shown.equals(consistency_table(report))
    shown = next(f for f in frames if "judge − humans" in f.columns)
    assert shown.equals(bias_table(audit))
    at.number_input(key="audit-price-in").set_value(2.5)
    at.number_input(key="audit-price-out").set_value(10.0)
    families = {"synthetic-gpt4-like": "k", "synthetic-kestrel-vl": "k"}
    at.text_input(key="audit-families").input(json.dumps(families))
    at.run()
    assert not at.exception, at.exception
    audit, _ = _library(engine, 50, Prices(input=2.5, output=10), families)
    frames = _frames(at)
    # the price column names the currency (it said "price / 1k units", in no currency)
    shown = next(f for f in frames if "price / 1k units (USD)" in f.columns)
    expected = cost_table(audit).rename(columns={"price / 1k units": "price / 1k units (USD)"})
    assert shown.equals(expected) and (shown["price / 1k units (USD)"] != "—").all()
    at.text_input(key="audit-currency").input("EUR").run()
    assert any("price / 1k units (EUR)" in f.columns for f in _frames(at))
    shown = next(f for f in frames if "judge − humans" in f.columns)
    assert "prefers own family" in shown["bias"].tolist() and shown.equals(bias_table(audit))


def test_a_pointwise_campaign_is_checked_against_its_pairwise_partner(sample, monkeypatch):
    url, engine, reviewer = sample
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = reviewer
    at.run()
    at = at.switch_page("pages/calibration_dashboard.py")
    at.run()
    campaigns = at.selectbox[0]
    (pointwise,) = [c for c in campaigns.options if c.startswith(POINTWISE)]
    campaigns.select(campaigns.options[campaigns.options.index(pointwise)])
    at.run()
    at.number_input[0].set_value(20)
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="consistency-partner").value.name == PAIRWISE
    _, report = _library(engine, 20)
    shown = next(f for f in _frames(at) if "inconsistent pairs" in f.columns)
    assert shown.equals(consistency_table(report))
    shown = next(f for f in _frames(at) if "judge − humans" in f.columns)
    assert "Spearman(score, length)" in shown["bias"].tolist()
