"""``critiquelab calibrate`` with the judge audits on the sample project: ``--consistency``
alone and with ``--campaign``, prices, families, and bad options (exit 2)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.readmodels.frames import campaign_judgement_frame
from data.readmodels.judge_facts import (
    campaign_judgement_usage,
    campaign_response_facts,
    contains_list,
)
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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # exited 1 with pydantic's raw text
        (["--price-in", "nan", "--price-out", "1"], "--price-in is nan; give a finite price ≥ 0"),
        # accepted, and printed as null
        (["--price-in", "1", "--price-out", "inf"], "--price-out is inf; give a finite price"),
        (["--price-in", "Infinity", "--price-out", "1"], "--price-in is inf; give a finite"),
        (["--price-in", "1e999", "--price-out", "1"], "--price-in is inf; give a finite"),
        (["--price-in", "-1", "--price-out", "1"], "--price-in is -1.0; give a finite price ≥ 0"),
    ],
)
def test_prices_on_the_command_line_are_finite_numbers(tmp_path, args, message):
    result = _run(f"sqlite:///{tmp_path / 'never.db'}", "--campaign", "c", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "never.db").exists()  # refused before the database is opened


@pytest.mark.parametrize(
    ("option", "text", "message"),
    [
        ("--prices", '{"j": {"input": true, "output": "7"}}', "`input` is true (a boolean)"),
        ("--prices", '{"j": {"input": 1, "output": "7"}}', "`output` is '7' (a string)"),
        ("--prices", '{"j": {"input": NaN, "output": 1}}', "`j.input` is NaN, which is not valid"),
        ("--prices", '{"j": {"input": 1e999, "output": 1}}', "`j.input` is 1e999, too large"),
        ("--prices", "[" * 200_000, "nested too deeply"),  # exited 1 (RecursionError)
        ("--families", "[" * 200_000, "nested too deeply"),
        ("--families", '{"a": 3}', "expected an object mapping judge and model names"),
        ("--prices", b"\xff{}", "not UTF-8 text"),
    ],
)
def test_price_and_family_files_are_read_by_the_one_reader(tmp_path, option, text, message):
    path = tmp_path / "option.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    result = _run(f"sqlite:///{tmp_path / 'never.db'}", "--campaign", "c", option, str(path))
    assert result.exit_code == 2, result.output
    assert f"{option} {path}" in result.output and message in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_an_oversized_price_file_is_refused_unread(tmp_path):
    from data.io.importers.sources import MAX_SMALL_FILE_BYTES

    path = tmp_path / "prices.json"
    path.write_text(" " * (MAX_SMALL_FILE_BYTES + 1) + "{}")
    result = _run(f"sqlite:///{tmp_path / 'never.db'}", "--campaign", "c", "--prices", str(path))
    assert result.exit_code == 2, result.output
    assert "the file is over the 4 MB limit" in result.output


def test_output_folders_are_made_first_and_a_bad_one_is_bad_input(sample, tmp_path):
    """``--json`` / ``--html`` make their folders as ``export -o`` does; a folder given as the
    file, or a file in the way, is refused (exit 2) before any work, not after it (exit 1)."""
    url, _ = sample
    out, html = tmp_path / "new" / "deeper" / "r.json", tmp_path / "other" / "r.html"
    made = _run(url, "--campaign", POINTWISE, "--json", str(out), "--html", str(html))
    assert made.exit_code == 0, made.output
    assert json.loads(out.read_text("utf-8"))["protocol"] and html.read_text("utf-8")
    folder = _run(url, "--campaign", POINTWISE, "--json", str(tmp_path))
    assert folder.exit_code == 2 and "is a directory" in folder.output
    (tmp_path / "a-file").write_text("x")
    blocked = _run(url, "--campaign", POINTWISE, "--html", str(tmp_path / "a-file" / "r.html"))
    assert blocked.exit_code == 2 and "a file is in the way" in blocked.output
    assert "--html" in blocked.output


def test_a_scale_for_a_protocol_whose_scale_is_fixed_is_refused(sample):
    """``--scale`` with an AlignMMBench campaign was silently ignored."""
    url, _ = sample
    refused = _run(url, "--campaign", POINTWISE, "--scale", "1:5")
    assert refused.exit_code == 2
    assert "--scale applies to the score protocol only; alignmmbench has a fixed scale" in (
        refused.output
    )
