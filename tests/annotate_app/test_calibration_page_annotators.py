"""The Calibration page leaves annotators out of the reference as ``calibrate
--exclude-annotator`` does (held and retired ones by themselves) and shows the Annotators table
with the HTML report's and the Monitor's marks (issue 24 §3, §6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from annotate_app.auth import USER_KEY
from annotate_app.cli.main import app
from annotate_app.navigation import APP_DIR
from annotate_app.text import escape_markdown
from data.services.users import create_user, to_record
from data.storage.engine import session_scope
from tests.annotate_app.test_reference_exclusions import _annotated_campaign

runner = CliRunner()


def _annotators(at: AppTest):
    return next(d.value for d in at.dataframe if "Longest run" in d.value.columns)


@pytest.mark.parametrize("role", ["reviewer"])
def test_the_page_excludes_annotators_and_shows_the_annotators_table(
    engine: Engine, db_url: str, monkeypatch, tmp_path: Path, role: str
) -> None:
    _annotated_campaign(engine)
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        user = to_record(create_user(session, "rev", "a long password 123", role))
    at = AppTest.from_file(str(APP_DIR / "pages/calibration_dashboard.py"), default_timeout=120)
    at.session_state[USER_KEY] = user
    at.run()
    assert not at.exception, at.exception
    at.number_input[0].set_value(0).run()
    assert not at.exception, at.exception
    box = at.multiselect(key="cal_exclude")
    assert box.options == ["ann2", "ann3", "ann4"]  # held and retired: not offered, named below
    assert any(
        "by themselves (their standing in the campaign): ann0 (held), ann1 (retired)." in c.value
        for c in at.caption
    )
    assert list(_annotators(at)["Annotator"]) == [
        "annotator:ann0 (excluded: held)",
        "annotator:ann1 (excluded: retired)",
        "annotator:ann2",
        "annotator:ann3",
        "annotator:ann4",
    ]
    assert any("answers a reviewer rejected, left out: 1." in c.value for c in at.caption)

    box.select("annotator:ann4").run()
    assert not at.exception, at.exception
    table = _annotators(at)
    assert list(table["Annotator"])[-1] == "annotator:ann4 (excluded: listed)"

    # the same exclusions, weights and table as calibrate --exclude-annotator ann4
    out = tmp_path / "out.json"
    command = ["--db", db_url, "calibrate", "--campaign", "camp-alignmmbench", "--bootstrap", "0"]
    result = runner.invoke(app, [*command, "--exclude-annotator", "ann4", "--json", str(out)])
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text("utf-8"))
    weights = ", ".join(
        f"{escape_markdown(name)} {w:.2f}" for name, w in written["reference"]["weights"].items()
    )
    assert any(f"Weights in the reference: {weights}." in c.value for c in at.caption)
    rows = written["annotators"]["rows"]
    assert list(table["Units"]) == [row["n"] for row in rows]
    assert list(table["LOO MAE"]) == pytest.approx([row["mae"]["value"] for row in rows])
