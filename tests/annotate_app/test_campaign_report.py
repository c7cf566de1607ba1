"""A campaign's report is assembled once (annotate_app/campaign_report.py), and the
*Disagreements* page queues exactly the disagreements that report counts.

What covers what: ``critiquelab calibrate --campaign`` and the Campaigns page's worker both call
:func:`build_campaign_report` (the CLI maps its flags onto a :class:`CampaignReportRequest`; the
page uses the defaults), so their files cannot differ and no test compares their bytes. This file
tests the assembly's parts and files; the CLI's flags are tested by the calibrate CLI tests
(``tests/calibration/test_cal_*_cli.py``, ``tests/annotate_app/test_reference_exclusions.py``),
the page's buttons by ``tests/annotate_app/test_admin_pages.py``.
"""

from __future__ import annotations

import json

import pytest

from annotate_app.campaign_report import CampaignReportRequest, build_campaign_report
from annotate_app.disagreement_review import open_disagreements
from data.readmodels.frames import campaign_judges
from data.services.disagreements import set_review_settings, tag_disagreement
from data.services.users import create_user
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope
from tests.calibration.conftest import sample_database

POINTWISE, PAIRWISE = "demo-alignmmbench-finished", "demo-pairwise-finished"


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_template):
    """The sample project, its pointwise campaign with a threshold of its own (2.2 points)."""
    with sample_database(tmp_path_factory.mktemp("report"), sample_template) as built:
        with session_scope(built.engine) as session:
            admin = create_user(session, "report-root", "a long password 123", "admin")
            set_review_settings(session, admin.id, POINTWISE, threshold=2.2, taxonomy=None)
        yield built.engine, admin


@pytest.mark.parametrize("campaign", [POINTWISE, PAIRWISE])
def test_the_page_queues_exactly_the_disagreements_the_report_counts(sample, campaign):
    engine, admin = sample
    with session_scope(engine) as session:
        campaign_id = get_campaign(session, campaign).id
        judges = campaign_judges(session, campaign_id)
    report = build_campaign_report(engine, CampaignReportRequest(campaign=campaign, bootstrap=0))
    assert judges
    for judge in judges:
        queue = open_disagreements(engine, admin.id, campaign_id, judge, include_tagged=True)
        details = report.calibration.report.details[judge]
        listed = details.disagreements
        assert details.disagreement_count == queue.found == len(queue.entries) >= len(listed) > 0
        # the report lists the first of the page's queue, in the same order, with the same gaps
        queued = [(e.unit_key, e.judge_value, e.reference_value, e.gap) for e in queue.entries]
        shown = zip(
            listed["unit"], listed["judge"], listed["reference"], listed["gap"], strict=True
        )
        assert queued[: len(listed)] == list(shown)
        if campaign == POINTWISE:  # the campaign's own threshold, on both sides
            assert (
                details.disagreement_threshold == 2.2
                and queue.rule == f"|{judge} − reference| ≥ 2.2"
            )
            assert min(e.gap for e in queue.entries) >= 2.2 - 1e-9
        else:
            assert details.disagreement_threshold is None
            assert min(e.gap for e in queue.entries) >= 0.5
        assert f"{len(listed)} of {details.disagreement_count} disagreements" in report.files.html


def test_the_default_report_has_the_audit_and_the_reviewers_causes(sample):
    engine, admin = sample
    with session_scope(engine) as session:
        campaign_id = get_campaign(session, POINTWISE).id
        judge = campaign_judges(session, campaign_id)[0]
    entry = open_disagreements(engine, admin.id, campaign_id, judge, include_tagged=True).entries[0]
    with session_scope(engine) as session:
        tag_disagreement(session, admin.id, entry, cause="too lenient", note="<b>kind</b>")
    report = build_campaign_report(engine, CampaignReportRequest(campaign=POINTWISE, bootstrap=0))
    files = report.files
    written = json.loads(files.result.to_json())
    assert written["judge_audit"] == report.judge_audit.model_dump(mode="json")
    assert "comparisons" not in written and "consistency" not in written
    assert written["reference"]["n_units"] == report.calibration.report.result.reference.n_units
    assert "<h2>Judge bias and cost</h2>" in files.html
    assert "<h2>Why judges disagree with the humans</h2>" in files.html
    assert "&lt;b&gt;kind&lt;/b&gt;" in files.html and "<b>kind" not in files.html
    assert "Is judge A better than judge B?" not in files.html


def test_a_request_adds_the_comparison_and_the_consistency_to_both_files(sample):
    engine, _ = sample
    with session_scope(engine) as session:
        first, second = campaign_judges(session, get_campaign(session, POINTWISE).id)[:2]
    request = CampaignReportRequest(
        campaign=POINTWISE,
        bootstrap=20,
        seed=3,
        compare=((first, second),),
        consistency=(POINTWISE, PAIRWISE),
        exclude_annotators=("demo-dave",),  # a login: the frame's rater is annotator:demo-dave
    )
    report = build_campaign_report(engine, request)
    written = json.loads(report.files.result.to_json())
    (comparison,) = report.comparisons
    assert (comparison.a, comparison.b) == (first, second)
    assert written["comparisons"] == [comparison.model_dump(mode="json")]
    assert report.consistency is not None
    assert written["consistency"] == report.consistency.model_dump(mode="json")
    assert written["options"]["exclude_annotators"] == ["annotator:demo-dave"]
    assert written["options"]["bootstrap"] == 20 and written["options"]["seed"] == 3
    for heading in ("Is judge A better than judge B?", "Scores and preferences: do they agree?"):
        assert heading in report.files.html
