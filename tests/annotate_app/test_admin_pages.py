"""Admin and reviewer pages under AppTest: role refusal, and each page's main action."""

from __future__ import annotations

import gc
import json

import krippendorff
import numpy as np
import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of
from sqlmodel import select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

import calibration  # noqa: F401  (heavy imports paid once here, not inside a timed page run)
import critic.sft  # noqa: F401
from annotate_app import calibration_worker
from annotate_app.auth import USER_KEY
from annotate_app.built_file import BuiltFile
from annotate_app.cli.main import app
from annotate_app.navigation import APP_DIR
from annotate_app.text import escape_markdown, safe_markdown
from data.queue import flag, next_unit
from data.services.adjudication import adjudicate
from data.services.admin import change_campaign_status, set_routing_as
from data.services.disagreements import disagreement_queue, tag_disagreement
from data.services.judgements import insert_judgements
from data.services.roles import PermissionDenied
from data.services.users import UserRecord, get_user, to_record
from data.storage.audit import list_events
from data.storage.engine import session_scope
from schemas.disagreements import JudgeDisagreement
from schemas.tables import Adjudication, Campaign, Item, Judgement, Response, Unit, User

TIMEOUT = 60
"""Seconds AppTest waits for one page run; generous because CI machines are shared."""
ADMIN_PAGES = [
    "pages/admin_users.py",
    "pages/admin_data.py",
    "pages/admin_campaigns.py",
    "pages/admin_monitor.py",
    "pages/admin_audit.py",
]
REVIEW_PAGES = ["pages/review_adjudicate.py", "pages/review_flags.py"]


@pytest.fixture
def world(engine, db_url, monkeypatch):
    """Five accounts, a dataset of three items and an alignmmbench campaign with answers."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=3)
        campaign = add_campaign(session, actor_id=people["root"])
        units = units_of(session, campaign.id)
        for name, score in (("ann", 2), ("bob", 9), ("cat", 5)):
            answer(session, units[0], people[name], score=score, seconds=40)
        answer(session, units[1], people["ann"], score=6, seconds=30)
        answer(session, units[1], people["bob"], score=7, seconds=35)
        records = {name: to_record(session.get(User, people[name])) for name in people.ids}
    return engine, records, campaign.id


def _page(file: str, user: UserRecord) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / file), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = user
    return at.run()


def _errors(at: AppTest) -> list[str]:
    return [element.value for element in at.error]


@pytest.mark.parametrize("file", ADMIN_PAGES + REVIEW_PAGES)
def test_annotators_are_refused_every_admin_and_reviewer_page(world, file):
    _, people, _ = world
    at = _page(file, people["ann"])
    assert not at.exception
    assert _errors(at) == [
        f"This page is for {'admin' if file in ADMIN_PAGES else 'reviewer or admin'} accounts; "
        "you are logged in as ann (annotator)."
    ]
    assert not at.dataframe and not at.button and not at.text_input


@pytest.mark.parametrize("file", ADMIN_PAGES)
def test_reviewers_are_refused_admin_pages(world, file):
    _, people, _ = world
    at = _page(file, people["rita"])
    assert _errors(at) == ["This page is for admin accounts; you are logged in as rita (reviewer)."]
    assert not at.button


@pytest.mark.parametrize("file", ADMIN_PAGES + REVIEW_PAGES)
def test_every_page_opens_for_an_admin(world, file):
    _, people, _ = world
    at = _page(file, people["root"])
    assert not at.exception, at.exception
    assert not _errors(at)


def test_a_page_opened_by_a_demoted_admin_is_refused_on_the_next_run(world):
    engine, people, _ = world
    at = _page("pages/admin_users.py", people["root"])
    with session_scope(engine) as session:
        session.get(User, people["root"].id).role = "annotator"
    at.run()
    assert "you are logged in as root (annotator)" in _errors(at)[0]


# --- people ---------------------------------------------------------------------------------


def test_admin_adds_an_account_and_changes_a_role(world):
    engine, people, _ = world
    at = _page("pages/admin_users.py", people["root"])
    at.text_input(key="new_name").input("dora")
    at.selectbox(key="new_role").select("reviewer")
    at.text_input(key="new_pw").input("a long password")
    at.button[0].click().run()  # the form's submit button comes first
    assert [s.value for s in at.success] == [escape_markdown("Account dora added as reviewer.")]
    assert "dora" in list(at.dataframe[0].value["Name"])
    at.selectbox(key="chosen_user").select("bob")
    at.selectbox(key="chosen_role").select("admin")
    at.button(key="change_role").click().run()
    assert [s.value for s in at.success] == [escape_markdown("bob is now admin.")]
    with session_scope(engine) as session:
        assert get_user(session, "dora").role == "reviewer"
        assert get_user(session, "bob").role == "admin"
        assert list_events(session, action_prefix="user.role")[0].actor_id == people["root"].id


def test_refusals_show_as_errors_and_change_nothing(world):
    engine, people, _ = world
    at = _page("pages/admin_users.py", people["root"])
    at.selectbox(key="chosen_user").select("root")
    at.button(key="disable").click().run()
    assert _errors(at) == [
        escape_markdown("root is the last active admin: make another account admin first")
    ]
    at.selectbox(key="chosen_user").select("bob")
    at.text_input(key="reset_pw").input("short")
    at.button(key="reset").click().run()
    assert _errors(at) == [escape_markdown("the password must have at least 8 characters")]
    with session_scope(engine) as session:
        assert get_user(session, "root").active
        assert list_events(session, action_prefix="user.") == []


# --- campaigns ------------------------------------------------------------------------------


def test_admin_creates_a_campaign_with_a_pair_sample(world):
    engine, people, _ = world
    at = _page("pages/admin_campaigns.py", people["root"])
    at.text_input(key="c_name").input("prefs")
    at.selectbox(key="c_protocol").select("pairwise")
    at.radio(key="c_pairs").set_value("all")
    at.number_input(key="c_k").set_value(2)
    at.button[0].click().run()
    assert not _errors(at), _errors(at)
    assert [s.value for s in at.success] == [escape_markdown("Campaign prefs created.")]
    with session_scope(engine) as session:
        created = session.exec(select(Campaign).where(Campaign.name == "prefs")).one()
    assert (created.protocol, created.overlap, created.created_by) == (
        "pairwise",
        2,
        people["root"].id,
    )
    assert created.options["pairs"] == {"mode": "all", "k": None, "seed": 0}


def test_campaign_settings_are_saved_and_audited_with_before_and_after(world):
    engine, people, campaign_id = world
    at = _page("pages/admin_campaigns.py", people["root"])
    at.number_input(key=f"s{campaign_id}_k").set_value(5)
    at.checkbox(key=f"s{campaign_id}_ref").uncheck()
    at.text_area(key=f"s{campaign_id}_instructions").input("Read <b>twice</b>.")
    at.button(key=f"FormSubmitter:settings_{campaign_id}-Save settings").click().run()
    assert [s.value for s in at.success] == ["Saved: overlap, show_reference, instructions"]
    with session_scope(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        event = list_events(session, action_prefix="campaign.update")[0]
    assert (campaign.overlap, campaign.show_reference) == (5, False)
    assert event.detail["changes"]["overlap"] == {"before": 3, "after": 5}
    assert event.actor_id == people["root"].id
    # the instructions preview shows the HTML as text
    assert safe_markdown("Read <b>twice</b>.") in [m.value for m in at.markdown]


def test_pause_resume_close_from_the_page(world):
    engine, people, campaign_id = world
    at = _page("pages/admin_campaigns.py", people["root"])
    at.button(key="status_pause").click().run()
    with session_scope(engine) as session:
        assert session.get(Campaign, campaign_id).status == "paused"
    # only what the status allows can be clicked (the service refuses the rest itself:
    # tests/data/test_admin_services.py)
    at.run()
    assert at.button(key="status_pause").disabled and not at.button(key="status_resume").disabled
    at.button(key="status_close").click().run()
    with session_scope(engine) as session:
        assert session.get(Campaign, campaign_id).status == "closed"
    at.run()
    assert all(
        at.button(key=f"status_{action}").disabled for action in ("pause", "resume", "close")
    )


# --- data -----------------------------------------------------------------------------------


def test_the_data_page_lists_datasets(world):
    _, people, _ = world
    at = _page("pages/admin_data.py", people["root"])
    table = at.dataframe[0].value
    assert list(table["Dataset"]) == ["ds"] and list(table["Responses"]) == [6]


# --- adjudication ---------------------------------------------------------------------------


def test_reviewer_adjudicates_the_most_disputed_unit(world):
    engine, people, campaign_id = world
    at = _page("pages/review_adjudicate.py", people["rita"])
    assert not at.exception and not _errors(at)
    queue = at.dataframe[0].value
    assert list(queue["Answers"]) == ["2, 5, 9", "6, 7"]
    with session_scope(engine) as session:
        first, second = (unit.id for unit in units_of(session, campaign_id)[:2])
    at.selectbox(key=f"adj_score_{first}").select(6)
    at.text_area(key=f"adj_note_{first}").input("Two of three read it right.")
    at.button(key="adj_save").click().run()
    assert not _errors(at), _errors(at)
    with session_scope(engine) as session:
        [ruling] = session.exec(select(Adjudication)).all()
    assert (ruling.unit_id, ruling.score, ruling.reviewer_id) == (first, 6, people["rita"].id)
    # the next unit opens with an empty form: no score chosen, no note (it kept 6 and the note)
    assert at.selectbox(key="adj_unit").value.unit_id == second
    score = next(box for box in at.selectbox if box.label == "Score")
    note = next(area for area in at.text_area if area.label.startswith("Note"))
    assert (score.value, note.value) == (None, "")


def test_a_score_and_note_chosen_for_a_unit_are_kept_when_switching_units(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        first, second = (unit.id for unit in units_of(session, campaign_id)[:2])
    at = _page("pages/review_adjudicate.py", people["rita"])
    at.selectbox(key=f"adj_score_{first}").select(6).run()
    at.text_area(key=f"adj_note_{first}").input("Two of three read it right.").run()
    at.selectbox(key="adj_unit").select_index(1).run()
    assert at.selectbox(key=f"adj_score_{second}").value is None  # the other unit: its own form
    assert at.text_area(key=f"adj_note_{second}").value == ""
    at.text_area(key=f"adj_note_{second}").input("Half right.").run()
    picker = at.selectbox(key="adj_unit")
    assert picker.value.unit_id == second  # marking its draft does not move the picker
    assert [option.endswith(" · draft kept") for option in picker.options] == [True, True]
    picker.select_index(0).run()
    assert not at.warning and not _errors(at)
    assert at.selectbox(key=f"adj_score_{first}").value == 6  # it was dropped on the switch
    assert at.text_area(key=f"adj_note_{first}").value == "Two of three read it right."
    at.button(key="adj_save").click().run()
    with session_scope(engine) as session:
        [ruling] = session.exec(select(Adjudication)).all()
    assert (ruling.unit_id, ruling.score, ruling.note) == (first, 6, "Two of three read it right.")
    assert at.success[0].value == escape_markdown("Final label recorded for r:ds-item-0/m1.")
    assert at.selectbox(key="adj_unit").options == ["r:ds-item-0/m2 · 6, 7 · draft kept"]


def test_a_final_label_needs_a_chosen_score(world):
    engine, people, campaign_id = world
    at = _page("pages/review_adjudicate.py", people["rita"])
    score = next(box for box in at.selectbox if box.label == "Score")
    assert score.value is None  # no default: the first scale point was preselected
    note = next(area for area in at.text_area if area.label.startswith("Note"))
    note.input("Looks fine.")
    at.button(key="adj_save").click().run()
    assert _errors(at) == [
        escape_markdown(
            "choose a score (integers 1–10): a alignmmbench unit needs a score before its final "
            "label can be recorded"
        )
    ]
    with session_scope(engine) as session:
        assert session.exec(select(Adjudication)).all() == []


def test_the_review_page_shows_the_human_mean_median_and_the_rubric(world):
    _, people, _ = world
    at = _page("pages/review_adjudicate.py", people["rita"])
    assert "3 answers · mean 5.33 · median 5" in [c.value for c in at.caption]  # 2, 5, 9
    rubric = next(m.value for m in at.markdown if m.value.startswith("- **1**"))
    band = escape_markdown("Complete and correct; at most unimportant omissions.")
    assert f"- **9–10**: {band}" in rubric


# --- monitor, flags, audit ------------------------------------------------------------------


def test_monitor_shows_progress_and_agreement_per_task(world):
    _, people, _ = world
    at = _page("pages/admin_monitor.py", people["root"])
    assert not at.exception, at.exception
    assert [m.value for m in at.metric][:2] == ["1 / 6", "5"]
    agreement = at.dataframe[0].value
    assert list(agreement["Task"]) == ["OCR"]
    # independent computation: the krippendorff package on the same 3 x 2 matrix
    expected = krippendorff.alpha(
        reliability_data=[[2, 6], [9, 7], [5, np.nan]], level_of_measurement="interval"
    )
    assert agreement["Alpha"][0] == f"{expected:.3f}"
    annotators = at.dataframe[1].value
    assert {"LOO MAE", "LOO MAE 95%", "LOO QWK", "Alpha without", "Competence", "Longest run",
            "Random-answer evidence", "Flags"} <= set(annotators.columns)  # fmt: skip
    assert "MACE" not in " ".join(annotators["Flags"])  # three answers raise no flag
    assert any("competence: ordinal-mace" in c.value for c in at.caption)
    effort = next(d.value for d in at.dataframe if "Flagged answers" in d.value.columns)
    assert {"Too fast", "Duplicate", "Copied", "Stock", "Flags",
            "Position / runs (Annotators table)"} <= set(effort.columns)  # fmt: skip
    assert any("700 words a minute" in c.value for c in at.caption)


def test_monitor_names_the_low_effort_signals_in_words(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        third = units_of(session, campaign_id)[2]
        answer(session, third, people["cat"].id, score=4, seconds=1)  # under the 5 s floor
    at = _page("pages/admin_monitor.py", people["root"])
    assert not at.exception, at.exception
    signals = next(d.value for d in at.dataframe if "Signal" in d.value.columns)
    # the same stock rationale everywhere also raises "duplicate rationale"; keys never show
    assert set(signals["Signal"]) == {"too fast", "duplicate rationale"}  # not too_fast, ...


def test_an_undefined_alpha_says_why():
    from annotate_app.campaign_calibration import TaskAgreement

    alone = TaskAgreement("OCR", 1, 3, float("nan"), "interval", paired_units=0)
    same = TaskAgreement("OCR", 2, 3, float("nan"), "interval", paired_units=3)
    assert alone.alpha_text == "n/a: no unit has two answers yet"
    assert same.alpha_text.startswith("n/a: the paired answers do not vary")
    assert TaskAgreement("OCR", 2, 3, 0.51234, "interval", 3).alpha_text == "0.512"


def test_reviewer_resolves_a_flag_and_the_unit_returns_to_the_queue(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        view = next_unit(session, campaign_id, people["cat"].id)
        flag(session, view.assignment_id, people["cat"].id, "image missing")
        unit = session.get(Unit, view.unit_id)
        item = session.get(Item, unit.item_pk)
        item.question = [
            {"type": "text", "text": "How many cats are on the sofa?"},
            {"type": "image", "image": "images/sofa.png"},  # never written: the file is missing
        ]
        session.add(item)
        response = session.get(Response, unit.response_pk).content
    at = _page("pages/review_flags.py", people["rita"])
    assert list(at.dataframe[0].value["Reason"]) == ["image missing"]
    # the flagged unit is on the page, so the report can be checked there
    shown = [m.value for m in at.markdown]
    assert safe_markdown("How many cats are on the sofa?") in shown
    assert safe_markdown(response) in shown
    assert [w.value for w in at.warning] == [
        escape_markdown("Image images/sofa.png cannot be shown: the file is missing")
    ]
    at.text_area(key="flag_note").input("Re-imported the full text.")
    at.button(key="flag_resolve").click().run()
    assert not _errors(at), _errors(at)
    assert [s.value for s in at.success] == [escape_markdown("Flag #1 resolved.")]
    with session_scope(engine) as session:
        assert session.get(Unit, view.unit_id).flagged is False
        assert list_events(session, action_prefix="flag.resolve")[0].actor_id == people["rita"].id


def test_audit_page_lists_and_exports_the_changes(world, db_url, tmp_path):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        change_campaign_status(session, people["root"].id, campaign_id, "pause")
    written = CliRunner().invoke(app, ["--db", db_url, "export", "annotations", "--campaign",
                                       "camp", "-o", str(tmp_path / "a.csv")])  # fmt: skip
    assert written.exit_code == 0, written.output
    at = _page("pages/admin_audit.py", people["root"])
    table = at.dataframe[0].value
    # an export is in the trail too (it had none), by the command line
    assert list(table["Action"]) == ["export.annotations", "campaign.pause", "campaign.create"]
    assert list(table["Who"]) == ["(command line)", "root", "root"]
    assert json.loads(table["Detail"][0]) == {"format": "csv", "rows": 5}
    assert "export" in at.selectbox(key="audit_family").options
    at.selectbox(key="audit_family").select("campaign")
    at.run()
    assert len(at.dataframe[0].value) == 2
    at.number_input(key="audit_limit").set_value(1)
    at.run()
    assert len(at.dataframe[0].value) == 1  # the newest only, counted in the database
    assert any("1 of 2 matching events shown" in caption.value for caption in at.caption)
    assert [button.label for button in at.get("download_button")] == [
        "Download CSV",
        "Download JSONL",
    ]


@pytest.mark.slow  # a calibration worker process
def test_a_refused_training_file_leaves_no_file_behind(world, tmp_path, calibration_worker_stopped):
    engine, people, _ = world
    with session_scope(engine) as session:
        add_campaign(session, "unanswered", actor_id=people["root"].id)
    url = engine.url.render_as_string(hide_password=False)
    target = tmp_path / "sft.jsonl"
    with pytest.raises(ValueError, match="has no human annotations yet"):
        calibration_worker.campaign_sft_file(url, "unanswered", target)
    assert not target.exists()
    assert calibration_worker.campaign_sft_file(url, "camp", target) == target.stat().st_size > 0


def test_a_built_file_is_removed_when_dropped_or_removed():
    built = BuiltFile(".jsonl")
    path = built.path
    assert path.read_bytes() == b""
    built = None
    gc.collect()
    assert not path.exists()
    built = BuiltFile(".jsonl")
    built.remove()
    assert not built.path.exists()
    built.remove()  # once is enough; a second time does nothing


@pytest.fixture
def calibration_worker_stopped():
    yield
    calibration_worker.shutdown()


def _refuse_campaign_reads(patch: pytest.MonkeyPatch) -> None:
    """Every read of a campaign's frame in the test's (the app's) process fails from now on: what
    the page shows must come from the calibration worker's process."""

    def refuse(*args, **kwargs):
        raise AssertionError("the page read a campaign's rows in the app's process")

    for module in (
        "data.readmodels.frames",
        "data.readmodels.campaign_input",
        "annotate_app.audit_views",
    ):
        patch.setattr(f"{module}.campaign_judgement_frame", refuse, raising=False)
    for module in ("data.readmodels.critic_io", "critic.sft"):  # the training file's read
        patch.setattr(f"{module}.annotated_units", refuse)
    patch.setattr("data.io.exporters.downloads.annotation_records", refuse)  # the annotations' read


@pytest.mark.slow  # a calibration worker process
def test_campaign_downloads_and_a_report_that_uses_the_adjudication(
    world, db_url, tmp_path, calibration_worker_stopped
):
    engine, people, campaign_id = world
    unit_key = "r:ds-item-0/m1"
    with session_scope(engine) as session:
        unit = units_of(session, campaign_id)[0]
        insert_judgements(
            session,
            [
                Judgement(
                    judge="gpt-4",
                    protocol="alignmmbench",
                    unit_key=unit_key,
                    response_pk=unit.response_pk,
                    score=7,
                    raw_output="[[7]]",
                )  # fmt: skip
            ],
        )
    with pytest.MonkeyPatch.context() as patch:
        _refuse_campaign_reads(patch)
        at = _page("pages/admin_campaigns.py", people["root"])
        labels = [button.label for button in at.get("download_button")]
        assert labels == ["Annotations (JSONL)", "Annotations (CSV)", "Annotations (PARQUET)"]
        at.button(key="build_report").click().run()
        assert not _errors(at), _errors(at)
        assert "2 units with a reference, 0 of them adjudicated" in at.caption[-1].value
        at.button(key="build_sft").click().run()
        assert not _errors(at), _errors(at)
        assert "Download SFT (JSONL)" in [b.label for b in at.get("download_button")]
        first_sft = at.session_state["campaign_sft_file"][1]
        assert isinstance(first_sft, BuiltFile) and first_sft.path.stat().st_size > 0
        first_sft_path, first_sft = first_sft.path, None
        with session_scope(engine) as session:
            adjudicate(session, people["rita"].id, unit.id, score=7, note="The judge is right.")
            queue = disagreement_queue(
                session, people["rita"].id, campaign_id, "gpt-4",
                [JudgeDisagreement(unit_key, "gpt-4", "7", "2", 5.0)],
            )  # fmt: skip
            tag_disagreement(session, people["rita"].id, queue[0], cause="too lenient")
        at.button(key="build_report").click().run()
        assert "2 units with a reference, 1 of them adjudicated" in at.caption[-1].value
        files = at.session_state["campaign_calibration_report"][1]
        at.button(key="build_sft").click().run()  # again: the adjudication is its label now
        sft = at.session_state["campaign_sft_file"][1].path.read_bytes()
        at.run()
        gc.collect()
        assert not first_sft_path.exists()  # then the file it replaced is gone with it
        # what the page's annotation buttons download when clicked (AppTest does not click them)
        url = engine.url.render_as_string(hide_password=False)
        downloads = {f: calibration_worker.campaign_annotations_file(url, "camp", f) for f in
                     ("jsonl", "csv", "parquet")}  # fmt: skip
    assert files.result.judges["gpt-4"].metric("mae").value == 0.0  # 7 vs the adjudicated 7
    # the files come from the one assembly that ``calibrate --campaign`` calls too
    # (tests/annotate_app/test_campaign_report.py); here, the reviewers' causes are in them
    assert "too lenient" in files.html and files.result.judge_audit is not None
    cli_sft = tmp_path / "cli-sft.jsonl"  # and the training file of ``export sft``
    written = CliRunner().invoke(app, ["--db", db_url, "export", "sft", "--campaign", "camp",
                                       "-o", str(cli_sft)])  # fmt: skip
    assert written.exit_code == 0, written.output
    assert sft == cli_sft.read_bytes() and sft.count(b"\n") == 2
    for export_format, data in downloads.items():
        cli_file = tmp_path / f"cli-annotations.{export_format}"
        written = CliRunner().invoke(app, ["--db", db_url, "export", "annotations", "--campaign",
                                           "camp", "-o", str(cli_file)])  # fmt: skip
        assert written.exit_code == 0, written.output
        assert data == cli_file.read_bytes(), export_format
    assert downloads["jsonl"].count(b"\n") == 5  # the world's five answers
    root = people["root"].id
    with session_scope(engine) as session:  # each file made is in the audit trail
        exports = [
            (e.action, e.actor_id, e.entity_id, e.detail["format"])
            for e in reversed(list_events(session, action_prefix="export."))
        ]
    assert exports == [
        *[("export.calibration", root, "camp", "html+json"), ("export.sft", root, "camp", "jsonl")]
        * 2,
        ("export.sft", None, "camp", "jsonl"),
        *[("export.annotations", None, "camp", f) for f in ("jsonl", "csv", "parquet")],
    ]


def test_the_review_page_shows_user_and_model_text_as_text(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        unit = units_of(session, campaign_id)[2]
        answer(session, unit, people["ann"].id, score=3, rationale="<img src=x onerror=alert(1)>")
        answer(session, unit, people["bob"].id, score=4, rationale="$x$ and <script>bad()</script>")
        insert_judgements(
            session,
            [
                Judgement(
                    judge="*judge*",
                    protocol="alignmmbench",
                    unit_key="r:ds-item-1/m1",
                    response_pk=unit.response_pk,
                    score=5,
                    raw_output="<b>Rating: 5</b>",
                )  # fmt: skip
            ],
        )
    at = _page("pages/review_adjudicate.py", people["rita"])
    at.selectbox(key="adj_unit").select_index(2).run()
    shown = [m.value for m in at.markdown]
    assert safe_markdown("<img src=x onerror=alert(1)>") in shown
    assert safe_markdown("$x$ and <script>bad()</script>") in shown
    assert [c.value for c in at.code] == ["<b>Rating: 5</b>"]  # a code block shows it literally
    assert at.expander[-1].label.startswith("\\*judge\\*")


def test_a_pairwise_final_label_starts_unchosen_and_needs_a_preference(engine, db_url, monkeypatch):
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1", "m2", "m3"))
        campaign = add_campaign(session, protocol="pairwise")
        first, second = units_of(session, campaign.id)[:2]
        for unit, labels in ((first, ("A", "B", "tie")), (second, ("A", "B"))):  # most split first
            for name, label in zip(("ann", "bob", "cat"), labels, strict=False):
                answer(session, unit, people[name], preference=label)
        rita = to_record(session.get(User, people["rita"]))
        first_id, second_id = first.id, second.id
    at = _page("pages/review_adjudicate.py", rita)
    assert "3 answers · A×1, B×1, tie×1" in [c.value for c in at.caption]
    assert at.radio(key=f"adj_preference_{first_id}").value is None  # no preselected A
    at.text_area(key=f"adj_note_{first_id}").input("B reads the chart.")
    at.button(key="adj_save").click().run()
    assert _errors(at) == [
        escape_markdown(
            "choose the better response (A, B or tie): a pairwise unit needs a preference "
            "before its final label can be recorded"
        )
    ]
    at.radio(key=f"adj_preference_{first_id}").set_value("B")
    at.button(key="adj_save").click().run()
    assert not _errors(at), _errors(at)
    assert at.radio(key=f"adj_preference_{second_id}").value is None
    assert at.text_area(key=f"adj_note_{second_id}").value == ""
    with session_scope(engine) as session:
        [ruling] = session.exec(select(Adjudication)).all()
    assert (ruling.unit_id, ruling.preference) == (first_id, "B")


def test_campaign_routing_is_set_from_the_page_and_audited(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        keys = {u.id: "r:" + session.get(Response, u.response_pk).response_id for u in units[:3]}
        # j1 and j2 agree on the first unit and are 6 points apart on the second.
        insert_judgements(session, [
            Judgement(judge=judge, protocol="alignmmbench", unit_key=keys[u.id],
                      response_pk=u.response_pk, score=score)
            for judge, scores in (("j1", (5, 2)), ("j2", (5, 8)))
            for u, score in zip(units[:2], scores, strict=True)
        ])  # fmt: skip
    at = _page("pages/admin_campaigns.py", people["root"])
    at.selectbox(key=f"s{campaign_id}_routing").set_value("judge-disagreement")
    at.multiselect(key=f"s{campaign_id}_rjudges").set_value(["j1", "j2"])
    at.button(key=f"FormSubmitter:routing_{campaign_id}-Apply routing").click().run()
    assert not _errors(at), _errors(at)
    assert [s.value for s in at.success] == [
        escape_markdown(
            "Routing judge-disagreement: 2 of 6 units ordered by judge disagreement (j1, j2)"
        )
    ]
    with session_scope(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        ranked = select(Unit).where(Unit.campaign_id == campaign_id).order_by(Unit.priority)
        first = session.exec(ranked).first()
        assert (campaign.routing, campaign.routing_judges) == ("judge-disagreement", ["j1", "j2"])
        assert first.id == units[1].id  # the unit the judges disagree on comes first
        assert list_events(session, action_prefix="campaign.routing")[0].actor_id == (
            people["root"].id
        )
        with pytest.raises(PermissionDenied):
            set_routing_as(session, people["ann"].id, campaign_id, "least-annotated")


def test_the_monitor_lists_held_annotators_and_releases_one(world):
    from data.services.gold import change_standing

    engine, people, campaign_id = world
    with session_scope(engine) as session:
        change_standing(
            session, campaign_id, "cat", "hold", actor_id=people["root"].id, reason="rushed"
        )
    at = _page("pages/admin_monitor.py", people["root"])
    assert not at.exception, at.exception
    said = escape_markdown(f"held by an admin ({people['root'].name}): rushed")
    assert f"**cat** — {said}" in [m.value for m in at.markdown]
    at.button(key="release-cat").click().run()
    assert [s.value for s in at.success] == [escape_markdown("cat is released.")]
    with session_scope(engine) as session:
        assert list_events(session, action_prefix="standing.")[0].detail["after"] == "released"
    assert not at.get("button") or "release-cat" not in [b.key for b in at.button]


def test_gold_settings_are_saved_from_the_campaigns_page_and_bounded(world):
    engine, people, campaign_id = world
    at = _page("pages/admin_campaigns.py", people["root"])
    assert not at.exception, at.exception
    at.number_input(key=f"g{campaign_id}_n").set_value(3)
    at.button(key=f"FormSubmitter:gold_{campaign_id}-Save gold settings").click().run()
    assert any("has 0" in e for e in _errors(at))  # no gold unit to qualify on
    at.number_input(key=f"g{campaign_id}_n").set_value(0)
    at.checkbox(key=f"g{campaign_id}_feedback").check()
    at.button(key=f"FormSubmitter:gold_{campaign_id}-Save gold settings").click().run()
    assert "Saved: gold_feedback" in [s.value for s in at.success]
    with session_scope(engine) as session:
        assert session.get(Campaign, campaign_id).gold_feedback is True


def test_a_gold_file_is_uploaded_on_the_campaigns_page_all_or_nothing(world):
    from data.storage.campaign_lookup import unit_keys
    from schemas.tables import GoldAnswer

    engine, people, campaign_id = world
    with session_scope(engine) as session:
        keys = [key for _, key, _, _ in unit_keys(session, campaign_id)]
    at = _page("pages/admin_campaigns.py", people["root"])
    assert not at.exception, at.exception
    bad = (
        json.dumps({"unit": keys[2], "score": 42}) + "\n"
        + json.dumps({"unit": keys[0], "score": 7}) + "\n"
        + json.dumps({"unit": keys[2], "score": 7, "why": "x"}) + "\n"
    ).encode()  # fmt: skip
    uploader = at.file_uploader(key=f"g{campaign_id}_file")
    uploader.set_value(("my-gold.jsonl", bad, "application/octet-stream"))
    at.button(key=f"FormSubmitter:gold_upload_{campaign_id}-Import gold answers").click().run()
    assert not at.exception, at.exception
    assert any("Nothing was imported: 3 problems" in e for e in _errors(at)), _errors(at)
    codes = [element.value for element in at.code]
    assert any(c.startswith("critiquelab gold import FILE --campaign ") for c in codes)
    (problems,) = [code for code in codes if "my-gold.jsonl" in code]
    lines = problems.splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"my-gold.jsonl:{n}" for n in (1, 2, 3)]
    assert "`score`" in lines[0] and "already served" in lines[1] and "`why`" in lines[2]
    with session_scope(engine) as session:
        assert not session.exec(select(GoldAnswer)).all()  # nothing written
    good = json.dumps({"unit": keys[2], "score": 7, "explanation": "counts right"}).encode()
    at.file_uploader(key=f"g{campaign_id}_file").set_value(("gold.jsonl", good, "text/plain"))
    at.button(key=f"FormSubmitter:gold_upload_{campaign_id}-Import gold answers").click().run()
    assert not at.exception, at.exception
    assert "1 gold answers added, 0 replaced; 1 gold units in all." in [s.value for s in at.success]
    with session_scope(engine) as session:
        (row,) = session.exec(select(GoldAnswer)).all()
        assert (row.score, row.explanation) == (7.0, "counts right")
        assert list_events(session, action_prefix="gold.import")[0].actor_id == people["root"].id
