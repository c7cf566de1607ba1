"""The Calibration page's work on a campaign, and the *Campaigns* page's downloads (annotations,
training file, report), done in a worker process.

Why a process: reading a large campaign and calibrating it is seconds of pandas and numpy that hold
the GIL. In the app's own process every annotator's submit, served by a thread of that process,
waited behind it: ``bench/annotate_bench.py --dashboard-load`` measured a submit p95 of 31 ms alone
and 209 ms while the page read a 100k-unit campaign (docs/log/2026-12-03-reliability-runs.md). Here
one worker process, started afresh (a fork of a threaded server could inherit held locks), reads
the campaign itself in a read-only snapshot and keeps the last campaign it read, so a changed
filter or option recalculates without reading again. The page receives only small results: what its
pickers offer (:class:`CampaignOverview`) and the report, never the campaign's rows.

Every request names the campaign's version
(:func:`data.readmodels.campaign_input.campaign_version`), which is also the key under which the
page caches the results.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.engine import Engine

from annotate_app.campaign_calibration import (
    TaskAgreement,
    calibrate_campaign,
    campaign_annotators,
    campaign_consistency,
    judge_audit,
    load_campaign,
    only_units,
    reference_exclusions,
    task_agreement,
    with_shortcut_baseline_source,
)
from annotate_app.campaign_report import (
    CampaignReportFiles,
    CampaignReportRequest,
    build_campaign_report,
)
from calibration import CalibrationOptions, CalibrationReport
from calibration.annotators import AnnotatorTable
from calibration.audits import JudgeAudit
from calibration.compare import JudgeComparison, compare_judges
from calibration.consistency import ConsistencyReport
from calibration.cost import Prices
from calibration.pairwise import UnparsedRule
from calibration.shortcut import SHORTCUT_JUDGE
from critic.sft import SftOptions, export_campaign_sft
from data.io.exporters.downloads import annotations_export
from data.readmodels.campaign_input import CampaignCalibrationInput
from data.services.effort import EffortReport
from data.services.monitor import low_effort_report
from data.storage.engine import make_engine, read_scope
from schemas.protocols import Protocol

T = TypeVar("T")

Version = tuple[int, ...]

WORKER_NICENESS = 10
"""Added to the worker's niceness: when the cores are busy, the scheduler gives the app's
process (the annotators' submits) the CPU first and the calibration waits; on idle cores it
changes nothing."""


@dataclass(frozen=True)
class CampaignScope:
    """Which campaign, at which version, restricted to which tasks and models (None: all)."""

    url: str
    """The database URL, which the worker opens itself."""
    campaign_id: int
    version: Version
    tasks: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None


@dataclass(frozen=True)
class CampaignOverview:
    """What the page's pickers offer for a campaign, and whether there is anything to show."""

    campaign: str
    protocol: Protocol
    judges: list[str]
    """Every model judge that scored the campaign under its protocol, in name order."""
    tasks: list[str]
    models: list[str]
    rows: int
    """Live answers and judgements read (0: nothing to calibrate yet)."""
    annotators: list[str] = field(default_factory=list)
    """Every human rater of the campaign as the frame names them (``annotator:<login>``)."""
    standing_exclusions: dict[str, str] = field(default_factory=dict)
    """Those of ``annotators`` held or retired in the campaign → that standing: the reference
    leaves them out by itself."""


@dataclass(frozen=True)
class PageCalibration:
    """The calibration of a scope: ``report`` is None when no unit matches the filters. The
    report's per-unit table (``units``) stays in the worker: the page never shows it."""

    report: CalibrationReport | None


def campaign_overview(scope: CampaignScope) -> CampaignOverview:
    """The pickers' choices for ``scope``'s campaign (its filters are not applied)."""
    return _run(_overview, scope)


def page_calibration(scope: CampaignScope, **options: Any) -> PageCalibration:
    """Calibrate ``scope`` with ``options`` (as :func:`~annotate_app.campaign_calibration.
    calibrate_campaign`), with the rationales of the listed disagreements."""
    return _run(_calibration, scope, options)


def page_comparison(
    scope: CampaignScope, a: str, b: str, *, unparsed: UnparsedRule, bootstrap: int, seed: int
) -> JudgeComparison:
    """Judge ``a`` against judge ``b`` on ``scope`` (:func:`calibration.compare.compare_judges`)."""
    return _run(_comparison, scope, a, b, unparsed, bootstrap, seed)


def page_audit(
    scope: CampaignScope,
    judges: tuple[str, ...],
    prices: tuple[float, float] | None,
    families: tuple[tuple[str, str], ...],
    bootstrap: int,
) -> JudgeAudit:
    """The judges' bias and cost on ``scope`` (:func:`calibration.audits.audit_judges`)."""
    return _run(_audit, scope, judges, prices, families, bootstrap)


def campaign_report(url: str, campaign_id: int) -> CampaignReportFiles:
    """The *Campaigns* page's report files of a campaign, read and calibrated in the worker: the
    report of ``critiquelab calibrate --campaign`` with its default options (one assembly,
    :func:`annotate_app.campaign_report.build_campaign_report`)."""
    return _run(_campaign_report, url, campaign_id)


def campaign_annotations_file(url: str, campaign: str, export_format: str) -> bytes:
    """The *Campaigns* page's annotations download: ``critiquelab export annotations`` in
    ``export_format``, read in a read-only snapshot in the worker."""
    return _run(_annotations_file, url, campaign, export_format)


def campaign_sft_file(url: str, campaign: str, target: Path) -> int:
    """The *Campaigns* page's critic training file of ``campaign``: ``critiquelab export sft``
    with its default options, written by the worker at ``target``; returns its size in bytes.

    The file goes to disk, not back through the pipe: at 200,000 units it is about 400 MB, which
    the page would otherwise hold in the admin's session. When the export refuses (a campaign
    with nothing to train on), nothing is left at ``target`` and the refusal is raised here.
    """
    return _run(_sft_file, url, campaign, target)


def page_annotators(url: str, campaign_id: int) -> AnnotatorTable | None:
    """The Monitor's Annotators table of the campaign
    (:func:`~annotate_app.campaign_calibration.campaign_annotators`): its bootstrap holds the GIL
    for seconds on a large campaign, which the annotators' submits would wait behind."""
    return _run(_annotators, url, campaign_id)


def page_effort(url: str, campaign_id: int) -> EffortReport:
    """The Monitor's low-effort report (:func:`data.services.monitor.low_effort_report`): it
    compares every answer's rationale with the annotator's others and with the responses (0.23 s
    of Python for the sample's 1,248 answers, growing with the answers), which the annotators'
    submits would wait behind in the app's process."""
    return _run(_effort, url, campaign_id)


def page_agreement(url: str, campaign_id: int) -> list[TaskAgreement]:
    """The Monitor's alpha per task
    (:func:`~annotate_app.campaign_calibration.task_agreement`), which reads every live label."""
    return _run(_agreement, url, campaign_id)


def page_consistency(
    url: str, pointwise_id: int, pairwise_id: int, delta: float, bootstrap: int
) -> ConsistencyReport:
    """Scores of one campaign against preferences of another of the same dataset
    (:func:`calibration.consistency.cross_protocol_consistency`)."""
    return _run(_consistency, url, pointwise_id, pairwise_id, delta, bootstrap)


# The page's side: one worker process, started on first use.


class WorkerDied(RuntimeError):
    """The worker process ended without answering (killed, out of memory)."""


class _Worker:
    """A child process ``python -m annotate_app.calibration_worker`` and its two pipes.

    Not :mod:`multiprocessing`: its ``spawn`` start re-runs the parent's ``__main__`` in the
    child, and in a Streamlit server ``__main__`` is the page script being run. The parent sends
    one pickled ``(function, args)`` at a time and reads back one pickled ``(ok, value)``.
    """

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=os.getcwd(),
        )

    def call(self, function: Callable[..., T], args: tuple) -> T:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            pickle.dump((function, args), self.process.stdin)
            self.process.stdin.flush()
            ok, value = pickle.load(self.process.stdout)
        except (EOFError, BrokenPipeError, pickle.UnpicklingError) as error:
            raise WorkerDied(f"the calibration worker ended ({self.process.poll()})") from error
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:  # always a pipe: started with stdin=PIPE
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_WORKER: _Worker | None = None
_WORKER_LOCK = threading.Lock()
"""One request at a time: the worker computes one calibration after another, on one core."""


def _run(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in the worker; once more in a new worker if the old one died."""
    global _WORKER
    with _WORKER_LOCK:
        for attempt in range(2):
            if _WORKER is None:
                _WORKER = _Worker()
            try:
                return _WORKER.call(function, args)
            except WorkerDied:
                _WORKER = None
                if attempt:
                    raise
    raise AssertionError("unreachable")


def shutdown() -> None:
    """Stop the worker (tests, benchmarks); the next request starts a new one."""
    global _WORKER
    with _WORKER_LOCK:
        worker, _WORKER = _WORKER, None
    if worker is not None:
        worker.stop()


# The worker's side.

_ENGINES: dict[str, Engine] = {}
_READ: dict[tuple[str, int, Version], CampaignCalibrationInput] = {}


def _engine(url: str) -> Engine:
    if url not in _ENGINES:
        _ENGINES[url] = make_engine(url)
    return _ENGINES[url]


def _source(scope: CampaignScope) -> CampaignCalibrationInput:
    """The campaign as read at ``scope.version`` (read once; only the latest read is kept)."""
    key = (scope.url, scope.campaign_id, scope.version)
    if key not in _READ:
        _READ.clear()  # the previous campaign's rows go before the next one's are read
        _READ[key] = load_campaign(_engine(scope.url), scope.campaign_id)
    return _READ[key]


def _filtered(scope: CampaignScope) -> CampaignCalibrationInput:
    return only_units(_source(scope), tasks=scope.tasks, models=scope.models)


def _overview(scope: CampaignScope) -> CampaignOverview:
    source = _source(scope)
    frame = source.frame
    return CampaignOverview(
        campaign=source.campaign,
        protocol=source.protocol,
        judges=list(source.judges),
        tasks=_names(frame, "task"),
        models=_names(frame, "model"),
        rows=len(frame),
        annotators=_names(frame[frame["kind"] == "human"], "rater") if not frame.empty else [],
        standing_exclusions=dict(source.standing_exclusions),
    )


def _annotators(url: str, campaign_id: int) -> AnnotatorTable | None:
    return campaign_annotators(_engine(url), campaign_id)


def _effort(url: str, campaign_id: int) -> EffortReport:
    with read_scope(_engine(url)) as session:
        return low_effort_report(session, campaign_id)


def _agreement(url: str, campaign_id: int) -> list[TaskAgreement]:
    return task_agreement(_engine(url), campaign_id)


def _names(frame: Any, column: str) -> list[str]:
    if frame.empty or column not in frame.columns:
        return []
    return sorted(frame[column].dropna().astype(str).unique())


def _calibration(scope: CampaignScope, options: dict[str, Any]) -> PageCalibration:
    source = _filtered(scope)
    if source.frame.empty:
        return PageCalibration(None)
    present = set(source.frame.loc[source.frame["kind"] == "human", "rater"].astype(str))
    listed = options.get("exclude_annotators") or ()
    # the page offers the campaign's annotators; one without a label after its filters is moot
    options = {**options, "exclude_annotators": tuple(n for n in listed if n in present)}
    engine = _engine(scope.url)
    if options.pop("baselines", False):
        # fitted on the reference these options make, as `calibrate --baselines` fits it
        chosen: dict[str, Any] = {**options, **reference_exclusions(source, options)}
        fitted_on = CalibrationOptions(protocol=source.protocol, **chosen)
        source = with_shortcut_baseline_source(engine, source, fitted_on)
        if options.get("judges"):
            options["judges"] = (*options["judges"], SHORTCUT_JUDGE)
    calibration = calibrate_campaign(engine, source, **options)
    return PageCalibration(replace(calibration.report, units=None))


def _comparison(
    scope: CampaignScope, a: str, b: str, unparsed: UnparsedRule, bootstrap: int, seed: int
) -> JudgeComparison:
    source = _filtered(scope)
    options = CalibrationOptions(
        protocol=source.protocol, unparsed=unparsed, bootstrap=bootstrap, seed=seed
    )
    return compare_judges(source.frame, options, a, b, overrides=source.overrides)


def _audit(
    scope: CampaignScope,
    judges: tuple[str, ...],
    prices: tuple[float, float] | None,
    families: tuple[tuple[str, str], ...],
    bootstrap: int,
) -> JudgeAudit:
    return judge_audit(
        _engine(scope.url),
        _filtered(scope),
        judges=judges,
        families=dict(families),
        prices=Prices(input=prices[0], output=prices[1]) if prices else None,
        bootstrap=bootstrap,
    )


def _consistency(
    url: str, pointwise_id: int, pairwise_id: int, delta: float, bootstrap: int
) -> ConsistencyReport:
    return campaign_consistency(
        _engine(url), pointwise_id, pairwise_id, delta=delta, bootstrap=bootstrap
    )


def _campaign_report(url: str, campaign_id: int) -> CampaignReportFiles:
    request = CampaignReportRequest(campaign=campaign_id)
    return build_campaign_report(_engine(url), request).files


def _annotations_file(url: str, campaign: str, export_format: str) -> bytes:
    with read_scope(_engine(url)) as session:
        return annotations_export(session, campaign, export_format)


def _sft_file(url: str, campaign: str, target: Path) -> int:
    try:
        with target.open("wb") as handle:
            export_campaign_sft(_engine(url), campaign, handle, SftOptions())
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target.stat().st_size


def _serve() -> None:
    """The worker's loop: answer each request read from stdin on the original stdout; anything
    else written to stdout (a library's print) goes to stderr instead. The worker runs at a
    lower priority (:data:`WORKER_NICENESS`)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    os.nice(WORKER_NICENESS)
    requests = sys.stdin.buffer
    while True:
        try:
            function, args = pickle.load(requests)
        except EOFError:
            return
        try:
            answer = pickle.dumps((True, function(*args)))
        except Exception as error:  # sent back and raised in the page
            try:
                answer = pickle.dumps((False, error))
            except Exception:  # an exception that does not pickle: its text
                answer = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))
        answers.write(answer)
        answers.flush()


if __name__ == "__main__":
    _serve()
