"""The calibration dashboard under AppTest, on the bundled sample project."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from data.readmodels.frames import campaign_judgement_frame, unit_content
from data.services.users import create_user
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

TIMEOUT = 120


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    """The sample project in a fresh database, plus an admin, a reviewer and an annotator."""
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine, folder = built.url, built.engine, built.folder
        summary = built.summary
        with session_scope(engine) as session:
            users = {
                role: create_user(session, f"cal-{role}", "a long password 123", role)
                for role in ("admin", "reviewer", "annotator")
            }
        yield url, engine, summary, users, folder


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
        "This page is for admin or reviewer accounts; you are logged in as cal\\-annotator "
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
    labels = [button.label for button in at.get("download_button")]
    assert labels[:2] == ["Download the HTML report", "Download the JSON"]
    assert any(s.value == "Judges against the reference" for s in at.subheader)
    # every campaign of the sample renders, with a grouping and a smaller bootstrap
    for option in at.selectbox[0].options:
        at.selectbox[0].set_value(next(c for c in at.selectbox[0].options if c == option))
        at.number_input[0].set_value(100)
        at.selectbox[1].set_value("task")
        at.run()
        assert not at.exception, (option, at.exception)


def test_a_campaign_without_human_answers_says_so_instead_of_empty_charts(sample, monkeypatch):
    """The open campaigns drew empty charts with a 0.000000 tick and all-zero tables."""
    url, _, _, users, folder = sample
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
    at = _page(url, users["reviewer"], monkeypatch)
    at.run()
    at.selectbox[0].set_value(
        next(c for c in at.selectbox[0].options if c.startswith("demo-mmie-open"))
    )
    at.run()
    assert not at.exception, at.exception
    assert any(i.value.startswith("No unit has a human reference yet") for i in at.info)
    assert not at.get("vega_lite_chart") and not at.dataframe


def test_disagreement_item_lookup(sample):
    _, engine, summary, _, _ = sample
    with session_scope(engine) as session:
        campaign = get_campaign(session, summary.campaigns[0])
        frame = campaign_judgement_frame(session, campaign.id)
        content = unit_content(session, campaign.id, frame["unit"].iloc[0])
    assert content.item.item_id == frame["item_id"].iloc[0]
    assert content.responses and json.dumps(content.item.question, default=str)


def _chart_layers(at) -> list[list[dict]]:
    """The encodings of every layer of every Vega-Lite chart on the page, in page order."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    return [[layer.get("encoding", {}) for layer in spec.get("layer", [spec])] for spec in specs]


def test_score_axes_are_in_numeric_order_with_flat_ticks(sample, monkeypatch):
    """The distribution and bias charts listed 1, 10, 2, ... (a text sort) under rotated ticks."""
    url, _, _, users, folder = sample
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
    at = _page(url, users["reviewer"], monkeypatch).run()
    at.selectbox[0].set_value(
        next(c for c in at.selectbox[0].options if c.startswith("demo-alignmmbench-finished"))
    )
    at.number_input[0].set_value(0)
    at.run()
    assert not at.exception, at.exception
    points = [str(point) for point in range(1, 11)]
    score_axes = [
        encoding["x"]
        for layers in _chart_layers(at)
        for encoding in layers
        if encoding.get("x", {}).get("type") in ("nominal", "ordinal")
    ]
    assert len(score_axes) == 4  # distribution and bias, for each of the two judges
    for axis in score_axes:
        assert axis.get("sort") == points
        assert axis.get("axis", {}).get("labelAngle") == 0


def test_the_headline_chart_comes_first_then_each_judge_then_the_tables(sample, monkeypatch):
    url, _, _, users, folder = sample
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
    at = _page(url, users["admin"], monkeypatch).run()
    at.number_input[0].set_value(100)
    at.run()
    headings = [s.value for s in at.subheader]
    assert headings.index("Judges beside the human ceiling") == 0
    assert headings.index("Judges against the reference") > 0  # the tables come after
    first, second, third, fourth = _chart_layers(at)[:4]
    # 1: each judge's interval (rule low–high), point and the human ceiling (tick)
    assert [(layer["x"]["field"], layer["y"]["field"]) for layer in first] == [
        ("low", "judge"),
        ("value", "judge"),
        ("value", "judge"),
    ]
    # 2, 3: judge against reference for each of the two judges; 4: the metric per task
    for scatter in (second, third):
        assert [layer["x"]["field"] for layer in scatter] == ["reference", "reference"]
        assert scatter[1]["size"]["field"] == "units"
    assert fourth[0]["y"]["field"] == "task"


def test_model_scores_show_judge_only_humans_only_and_ppi_on_the_partial_campaign(
    sample, monkeypatch
):
    """demo-mmie-partial (humans on half the units, judges on all): the page's Model scores
        table has a PPI++ value and the labels it is worth for every judge and model, overall, and
    a row per MMIE category."""
    url, _, _, users, folder = sample
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
    at = _page(url, users["reviewer"], monkeypatch).run()
    at.selectbox[0].set_value(
        next(c for c in at.selectbox[0].options if c.startswith("demo-mmie-partial"))
    )
    at.number_input[0].set_value(0)
    at.run()
    assert not at.exception, at.exception
    assert "Model scores" in [s.value for s in at.subheader]
    table = next(
        frame.value for frame in at.dataframe if "PPI++ ±" in getattr(frame.value, "columns", [])
    )
    overall = table[table["leaderboard"] == "average"]
    assert len(overall) == 8  # two judges × four models
    assert all(" ± " in cell for cell in overall["PPI++ ±"])
    assert all(cell.split(" worth ")[1].isdigit() for cell in overall["worth N labels"])
    per_category = table[table["leaderboard"] != "average"]  # MMIE's categories, as it shows
    assert len(per_category) == 8 * 3
    assert set(per_category["leaderboard"]) == {"category:MSR", "category:PBL", "category:SA"}
