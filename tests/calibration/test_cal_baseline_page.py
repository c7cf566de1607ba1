"""The Calibration page's *Shortcut baseline* switch: the judge ``baseline:shortcut`` of
``calibrate --baselines`` beside the real judges (issue 27 §3), with the command's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from annotate_app.auth import USER_KEY
from annotate_app.cli.main import app
from annotate_app.navigation import APP_DIR
from calibration.shortcut import SHORTCUT_JUDGE
from data.services.users import create_user
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

CAMPAIGN = "demo-alignmmbench-finished"


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        with session_scope(built.engine) as session:
            reviewer = create_user(session, "base-reviewer", "a long password 123", "reviewer")
        yield built.url, reviewer


def _metrics_table(at: AppTest):
    (table,) = [d.value for d in at.dataframe if "Mean abs. error" in d.value.columns][:1]
    return table


def test_the_switch_adds_the_commands_shortcut_baseline(
    sample, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, reviewer = sample
    monkeypatch.setenv("CRITIQUELAB_DB", url)
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=300)
    at.session_state[USER_KEY] = reviewer
    at.run()
    at = at.switch_page("pages/calibration_dashboard.py")
    at.run()
    (picker,) = [box for box in at.selectbox if box.key == "cal_campaign"]
    picker.select_index(picker.options.index(f"{CAMPAIGN} (alignmmbench)"))
    at.number_input[0].set_value(0)  # bootstrap: the point figures are compared
    at.run()
    assert not at.exception, at.exception
    assert SHORTCUT_JUDGE not in _metrics_table(at).index  # off unless asked for
    at.checkbox(key="cal_baselines").check()
    at.run()
    assert not at.exception, at.exception
    shown = _metrics_table(at).loc[SHORTCUT_JUDGE]

    out = tmp_path / "calibration.json"
    done = CliRunner().invoke(
        app, ["--db", url, "calibrate", "--campaign", CAMPAIGN, "--baselines", "--bootstrap", "0",
              "--json", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    expected = json.loads(out.read_text())["judges"][SHORTCUT_JUDGE]
    assert int(shown["Units"]) == expected["n"]
    assert float(shown["Mean abs. error"]) == pytest.approx(expected["mae"], abs=5e-4)
    assert float(shown["Pearson r"]) == pytest.approx(expected["pearson"], abs=5e-4)
