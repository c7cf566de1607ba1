"""``critiquelab calibrate`` with the judge audits on the sample project: ``--consistency``
alone and with ``--campaign``, prices, families, and bad options (exit 2)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.io.frames import campaign_judgement_frame
from data.io.judge_facts import campaign_judgement_usage, campaign_response_facts, contains_list
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

POINTWISE, PAIRWISE = "demo-alignmmbench-finished", "demo-pairwise-finished"


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    with sample_database(tmp_path_factory.mktemp("sample"), sample_template) as built:
        url, engine = built.url, built.engine
        yield url, engine


def _run(url, *args):
    return CliRunner().invoke(app, ["--db", url, "calibrate", "--bootstrap", "50", *args])


def test_list_detection():
    assert contains_list("Steps:\n1. open\n2. close") and contains_list("- a\n- b")
    assert contains_list([{"type": "text", "text": "  * item"}, {"type": "image", "path": "x"}])
    assert not contains_list("3.5 apples - not a list") and not contains_list("-nospace")


def test_sample_records_usage_and_latency_for_every_judgement(sample):
    url, engine = sample
    with session_scope(engine) as session:
        from data.storage.campaign_lookup import get_campaign

        campaign = get_campaign(session, PAIRWISE)
        usage = campaign_judgement_usage(session, campaign.id)
        facts = campaign_response_facts(session, campaign.id)
        frame = campaign_judgement_frame(session, campaign.id)
    assert len(usage) == (frame["kind"] == "model").sum()
    assert all(u.input_tokens and u.output_tokens and u.latency_s for u in usage)
    assert {f.response_id for f in facts} >= {
        rid for unit in frame["unit"] for rid in unit[2:].split("|")
    }


def test_consistency_alone_writes_json_and_html(sample, tmp_path):
    url, _ = sample
    out, html = tmp_path / "c.json", tmp_path / "c.html"
    result = _run(
        url, "--consistency", POINTWISE, PAIRWISE, "--json", str(out), "--html", str(html)
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())["consistency"]
    raters = {r["rater"]: r for r in report["raters"]}
    assert set(raters) == {"humans", "synthetic-gpt4-like", "synthetic-critic-v0"}
    assert report["n_pairs"] > 100 and report["delta"] == 1
    humans = raters["humans"]
    assert humans["ci"][0] <= humans["consistency"] <= humans["ci"][1]
    # the synthetic judges are noisier readings of the same latent quality than the humans
    assert humans["consistency"] > raters["synthetic-critic-v0"]["consistency"]
    assert "Scores and preferences: do they agree?" in html.read_text()
    assert "inconsistent pairs" in result.output


def test_campaign_with_audits_prices_and_families(sample, tmp_path):
    url, _ = sample
    families = tmp_path / "families.json"
    families.write_text(json.dumps({"synthetic-gpt4-like": "k", "synthetic-kestrel-vl": "k"}))
    out, html = tmp_path / "a.json", tmp_path / "a.html"
    result = _run(
        url, "--campaign", PAIRWISE, "--consistency", POINTWISE, PAIRWISE, "--price-in", "2.5",
        "--price-out", "10", "--families", str(families), "--json", str(out), "--html", str(html),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    assert "judges" in summary and "consistency" in summary
    audit = summary["judge_audit"]
    costs = {c["judge"]: c for c in audit["costs"]}
    gpt = costs["synthetic-gpt4-like"]
    expected = (gpt["input_tokens_per_1000"] * 2.5 + gpt["output_tokens_per_1000"] * 10) / 1e6
    assert gpt["cost_per_1000"] == pytest.approx(expected) and gpt["seconds_per_1000"] > 0
    biases = {b["judge"]: b for b in audit["biases"]}
    assert biases["synthetic-gpt4-like"]["self_preference"]["n"] > 0
    assert biases["synthetic-critic-v0"]["self_preference"] is None  # not in the mapping
    assert biases["synthetic-gpt4-like"]["length_controlled"]["agreement"] is not None
    page = html.read_text()
    assert "Judge bias and cost" in page and "Length-controlled agreement" in page


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--consistency", PAIRWISE, POINTWISE],
            f"scores comes first; give --consistency {POINTWISE} {PAIRWISE}",
        ),
        (["--consistency", POINTWISE, "demo-mmie-finished"], "different datasets"),
        (["--campaign", PAIRWISE, "--price-in", "1"], "give both --price-in and --price-out"),
        (["--consistency", POINTWISE, PAIRWISE, "--delta", "-1"], "--delta must be ≥ 0"),
        (  # the consistency alone once read any rule but "tie" as "drop"
            ["--consistency", POINTWISE, PAIRWISE, "--no-majority", "toss"],
            "--no-majority 'toss' is not one of tie, drop",
        ),
        (
            ["--judgments", "x.jsonl", "--protocol", "pairwise", "--families", "f.json"],
            "--families audit campaigns in the database",
        ),
    ],
)
def test_bad_audit_options_exit_2_naming_the_fix(sample, args, message):
    url, _ = sample
    result = _run(url, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_an_unknown_judge_is_named_beside_the_campaigns_judges(sample):
    """The campaign is read with only the named judges' rows: the error lists the campaign's
    judges, not the none that were read."""
    url, _ = sample
    result = _run(url, "--campaign", POINTWISE, "--judge", "nosuch")
    assert result.exit_code == 2, result.output
    assert (
        "judge(s) nosuch have no judgements here; present: synthetic-critic-v0, synthetic-gpt4-like"
    ) in result.output
