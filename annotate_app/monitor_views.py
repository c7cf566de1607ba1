"""The Monitor's figures that read every live answer of a campaign (the Annotators table, the
low-effort report, the alpha per task): computed in the calibration worker
(:mod:`annotate_app.calibration_worker`) and cached on the campaign's version
(:func:`~data.readmodels.campaign_input.campaign_version`).

Why: in the app's process their Python (the Annotators table's bootstrap above all) held the GIL
that the annotators' submits wait for, on every rerun of the page. Every answer, review, hold or
release, gold change, skip and flag changes the version (each is a new answer row or an audit
event), so a cached figure is never older than the campaign. What no version tracks (leases
taken or expired) stays live on the page: the progress counts, read in one query each.
"""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from annotate_app.calibration_worker import (
    Version,
    page_agreement,
    page_annotators,
    page_effort,
)
from annotate_app.campaign_calibration import TaskAgreement
from calibration.analysis import annotators_section
from calibration.result import AnnotatorsSection
from data.readmodels.campaign_input import campaign_version
from data.services.effort import EffortReport
from data.storage.engine import read_scope


def live_annotators(engine: Engine, campaign_id: int) -> AnnotatorsSection | None:
    """The Annotators table of the campaign's live labels
    (:func:`~annotate_app.campaign_calibration.campaign_annotators`; None before the first
    label)."""
    url, version = _key(engine, campaign_id)
    return _annotators(url, campaign_id, version)


def live_effort_report(engine: Engine, campaign_id: int) -> EffortReport:
    """:func:`data.services.monitor.low_effort_report` of the campaign as it is now."""
    url, version = _key(engine, campaign_id)
    return _effort(url, campaign_id, version)


def live_task_agreement(engine: Engine, campaign_id: int) -> list[TaskAgreement]:
    """:func:`annotate_app.campaign_calibration.task_agreement` of the campaign as it is now."""
    url, version = _key(engine, campaign_id)
    return _agreement(url, campaign_id, version)


def _key(engine: Engine, campaign_id: int) -> tuple[str, Version]:
    with read_scope(engine) as session:
        version = campaign_version(session, campaign_id)
    return engine.url.render_as_string(hide_password=False), version


# In each cached function `version` is the cache key only: the worker reads the campaign as it
# is now.


@st.cache_data(show_spinner="Measuring the annotators…", max_entries=16)
def _annotators(url: str, campaign_id: int, version: Version) -> AnnotatorsSection | None:
    table = page_annotators(url, campaign_id)
    return annotators_section(table) if table is not None else None


@st.cache_data(show_spinner="Looking for low-effort answers…", max_entries=16)
def _effort(url: str, campaign_id: int, version: Version) -> EffortReport:
    return page_effort(url, campaign_id)


@st.cache_data(show_spinner="Measuring agreement…", max_entries=16)
def _agreement(url: str, campaign_id: int, version: Version) -> list[TaskAgreement]:
    return page_agreement(url, campaign_id)
