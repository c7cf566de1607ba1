"""The typed calibration result: its committed JSON Schema, real ``--json`` outputs validating
against it, attribute access agreeing with the JSON and with independent computations, and the
campaign calibration and agreement functions shared by the CLI and the pages."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import krippendorff
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from annotate_app.campaign_calibration import (
    calibrate_campaign,
    load_campaign,
    only_units,
    task_agreement,
)
from annotate_app.cli.main import app
from calibration import CalibrationOptions, calibrate
from calibration.result import CalibrationResult, schema_text
from data.readmodels.campaign_input import read_calibration_input
from data.services.monitor import human_rating_matrices
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs/spec/calibration-result.schema.json"
POINTWISE, PAIRWISE = "demo-alignmmbench-finished", "demo-pairwise-finished"
runner = CliRunner()


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    """The bundled sample project (finished campaigns with humans and judges) in a database."""
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine = built.url, built.engine
        yield url, engine


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _cli(*args: str) -> None:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output


def test_committed_schema_is_the_generated_one():
    assert SCHEMA_PATH.read_text("utf-8") == schema_text(), (
        "docs/spec/calibration-result.schema.json is stale; regenerate it with "
        "python -c \"from calibration.result import schema_text; print(schema_text(), end='')\""
        " > docs/spec/calibration-result.schema.json"
    )


def test_pandalm_json_validates_and_keeps_its_keys(pandalm_files, tmp_path):
    out = tmp_path / "out.json"
    keys = ("humans", "gpt", "pandalm")
    files = [arg for key in keys for arg in ("--judgments", str(pandalm_files[key]))]
    _cli("calibrate", "--protocol", "pairwise", "--bootstrap", "0", *files, "--json", str(out),
         "--compare", "gpt-3.5-turbo", "pandalm-7b")  # fmt: skip
    written = json.loads(out.read_text("utf-8"))
    errors = sorted(_validator().iter_errors(written), key=str)
    assert not errors, errors[:3]
    # the JSON is the serialisation of the typed result: a round trip changes nothing
    result = CalibrationResult.model_validate(written)
    assert result.model_dump(mode="json") == written
    assert list(written) == [
        "protocol", "scale", "reference", "options", "definitions", "human", "judges",
        "versions", "comparisons", "annotators",
    ]  # fmt: skip
    annotators = written["annotators"]
    assert annotators["model"] == "dawid-skene" and annotators["loo_rule"] == "majority"
    assert [row["annotator"] for row in annotators["rows"]] == list(
        written["human"]["loo"]["by_annotator"]
    )
    first = annotators["rows"][0]
    assert first["mae"] is None and first["accuracy"]["low"] is None  # no bootstrap, no interval
    assert first["weight"] == 1.0 and written["reference"]["weights"][first["annotator"]] == 1.0
    gpt = written["judges"]["gpt-3.5-turbo"]
    # a pairwise judge has no maps nor model ranking; without bootstrap no interval
    assert not {"maps", "ranking_kendall", "ci"} & set(gpt)
    assert list(gpt)[:3] == ["n", "coverage", "acc_with_tie"]  # the order of before the types
    assert set(written["human"]) == {
        "n_annotators", "n_units", "n_judgements", "annotations_per_unit", "alpha_nominal", "loo",
    }  # fmt: skip
    assert result.pairwise and result.human.alphas["alpha_nominal"].low is None
    assert result.judges["gpt-3.5-turbo"].metric("acc_with_tie").value == gpt["acc_with_tie"]
    assert result.comparisons[0].a == "gpt-3.5-turbo"


def test_pointwise_campaign_json_validates(sample, tmp_path):
    url, engine = sample
    out = tmp_path / "campaign.json"
    _cli("--db", url, "calibrate", "--campaign", POINTWISE, "--bootstrap", "50", "--json", str(out))
    written = json.loads(out.read_text("utf-8"))
    errors = sorted(_validator().iter_errors(written), key=str)
    assert not errors, errors[:3]
    assert {"models", "judge_audit"} <= set(written)
    judge, block = next(iter(written["judges"].items()))
    assert {"ci", "maps", "ranking_kendall", "by", "by_aggregate"} <= set(block)
    assert list(block)[:3] == ["n", "coverage", "mae"] and list(block)[-1] == "ranking_kendall"
    aggregate = list(block["by_aggregate"]["task"])
    assert aggregate[:3] == ["mode", "n_groups", "mae"]
    assert aggregate[-1] == "groups_without_correlation"
    # the library function the CLI, the Calibration page and the Campaigns page share gives
    # the same numbers as the command
    shared = calibrate_campaign(
        engine, load_campaign(engine, POINTWISE), bootstrap=50
    ).report.result
    assert shared.judges[judge].model_dump(mode="json") == block
    assert shared.human.model_dump(mode="json") == written["human"]


def test_attributes_agree_with_an_independent_pearson(sample):
    _, engine = sample
    source = load_campaign(engine, POINTWISE)
    report = calibrate(
        source.frame,
        CalibrationOptions(protocol=source.protocol, bootstrap=20),
        overrides=source.overrides,
    )
    # independent of the library: the reference is the mean of the humans' scores, replaced by
    # the adjudicated score where there is one; a judge's score is its mean per unit
    frame = source.frame.assign(number=pd.to_numeric(source.frame["value"], errors="coerce"))
    reference = frame[frame["kind"] == "human"].groupby("unit")["number"].mean()
    reference.update(pd.Series(source.overrides, dtype=float))
    for name, judge in report.result.judges.items():
        rows = frame[(frame["kind"] == "model") & (frame["rater"] == name)]
        both = pd.concat([rows.groupby("unit")["number"].mean(), reference], axis=1).dropna()
        expected = stats.pearsonr(both.iloc[:, 0], both.iloc[:, 1]).statistic
        pearson = judge.metric("pearson")
        assert pearson.value == pytest.approx(expected, rel=1e-9)
        assert pearson.low <= pearson.value <= pearson.high
        assert judge.n == len(both)
        assert report.summary["judges"][name]["pearson"] == pearson.value


def test_read_calibration_input_reads_the_campaign(sample):
    _, engine = sample
    with session_scope(engine) as session:
        source = read_calibration_input(session, PAIRWISE)
        campaign = get_campaign(session, PAIRWISE)
    assert (source.campaign, source.protocol.name) == (PAIRWISE, "pairwise")
    assert source.judges and set(source.judges) == set(
        source.frame.loc[source.frame["kind"] == "model", "rater"]
    )
    assert set(source.frame["unit"]) >= set(source.overrides)
    with session_scope(engine) as session:
        by_id = read_calibration_input(session, campaign.id, judges=source.judges[:1])
    assert set(by_id.frame.loc[by_id.frame["kind"] == "model", "rater"]) == {source.judges[0]}
    assert by_id.judges == source.judges  # every judge is listed, the frame holds the chosen


def test_only_units_keeps_whole_units_of_the_chosen_tasks(sample):
    _, engine = sample
    source = load_campaign(engine, POINTWISE)
    tasks = sorted(source.frame["task"].dropna().unique())
    chosen = only_units(source, tasks=tasks[:1])
    units = set(chosen.frame["unit"])
    assert units and units < set(source.frame["unit"])
    assert chosen.frame.equals(source.frame[source.frame["unit"].isin(units)])
    result = calibrate_campaign(engine, chosen, bootstrap=0).report.result
    assert result.reference.n_units_total == len(units)


def test_task_agreement_matches_the_krippendorff_package(sample):
    _, engine = sample
    with session_scope(engine) as session:
        campaign = get_campaign(session, POINTWISE)
        matrices = human_rating_matrices(session, campaign.id)
    rows = task_agreement(engine, campaign.id)
    assert [row.task for row in rows] == sorted(matrices)
    for row in rows:
        matrix = matrices[row.task]
        oracle = krippendorff.alpha(matrix.values, level_of_measurement="interval")
        assert row.alpha == pytest.approx(oracle, rel=1e-9)
        assert (row.annotators, row.units, row.level) == (
            len(matrix.annotators), len(matrix.units), "interval",
        )  # fmt: skip
