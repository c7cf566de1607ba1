"""A campaign's calibration report, assembled in one place: ``critiquelab calibrate --campaign``
and the *Campaigns* page's report (run by the calibration worker) both call
:func:`build_campaign_report` with a :class:`CampaignReportRequest`, so their files are the same
by construction.

The assembly runs these steps in order; a new part of the report is one more field of the request
(its options), one more field of :class:`CampaignReport` (its result), one more step below, and
its JSON section and HTML section added in :func:`_files`:

1. read the campaign in one snapshot (another protocol or scale when asked);
2. compare each pair of judges asked for: first, so that a misspelt judge is named before the long
   calibration;
3. calibrate (:func:`annotate_app.campaign_calibration.calibrate_campaign`: the reference
   leaves held and retired annotators out, the listed disagreements get their rationales);
4. audit the judges' biases and costs on the units calibration read;
5. check another pair of campaigns' consistency when asked;
6. the files: the METRICS.md JSON with the extra sections, and the HTML report with the
   reviewers' "Why judges disagree" section.

Why here: combining a campaign read from the database (:mod:`data`) with the metrics
(:mod:`calibration`) needs a layer above both (see :mod:`annotate_app.campaign_calibration`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Protocol as TypingProtocol

from sqlalchemy.engine import Engine

from annotate_app.campaign_calibration import (
    CampaignCalibration,
    calibrate_campaign,
    campaign_consistency,
    judge_audit,
    load_campaign,
    reference_exclusions,
    with_shortcut_baseline_source,
)
from annotate_app.disagreement_review import report_html
from calibration import CalibrationOptions
from calibration.audits import JudgeAudit
from calibration.bootstrap import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from calibration.compare import JudgeComparison, compare_judges
from calibration.consistency import ConsistencyReport
from calibration.cost import Prices
from calibration.reference import no_majority_rule
from calibration.result import CalibrationResult
from calibration.units import human_rater_names
from schemas.protocols import protocol_on_scale

Advance = Callable[[int], None]
"""Called with how many steps (bootstrap resamples) were just done."""


class ProgressBars(TypingProtocol):
    """Opens a progress display for one step (``CliState.progress`` is one); ``total`` None
    when the step cannot count its work."""

    def __call__(
        self, description: str, total: int | None = None
    ) -> AbstractContextManager[Advance]: ...


def no_progress(description: str, total: int | None = None) -> AbstractContextManager[Advance]:
    """A :class:`ProgressBars` that shows nothing (the page's worker)."""
    return nullcontext(lambda _done: None)


@dataclass(frozen=True)
class CampaignReportRequest:
    """Everything that shapes a campaign's report; the defaults are ``critiquelab calibrate
    --campaign NAME``'s, which the *Campaigns* page's report uses."""

    campaign: str | int
    """The campaign's name or id."""
    judges: tuple[str, ...] | None = None
    """Only these model judges (None: every judge of the campaign)."""
    protocol: str | None = None
    """Read the values under this protocol (None: the campaign's)."""
    scale: tuple[float, float, float | None] | None = None
    """With ``protocol`` (or the campaign's): another scale, (min, max, step)."""
    consensus: str | None = None
    """The humans' reference rule (None: mean for scores, majority for preferences)."""
    exclude_annotators: tuple[str, ...] = ()
    """Annotators left out of the reference and the human ceiling: logins or rater names."""
    no_majority: str = "tie"
    unparsed: str = "wrong"
    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = DEFAULT_SEED
    max_disagreements: int = 25
    """Disagreements listed per judge."""
    by: tuple[str, ...] | None = None
    """Fields to group by (None: task and category where present; () none)."""
    aggregate: str = "mean"
    compare: tuple[tuple[str, str], ...] = ()
    """Pairs of judges to compare, A and B (``human`` for the leave-one-out human), each in turn."""
    consistency: tuple[str, str] | None = None
    """A pointwise and a pairwise campaign of one dataset whose consistency the report adds."""
    delta: float | None = None
    """Consistency: a tie is consistent when the scores differ by at most this."""
    prices: dict[str, Prices] | Prices | None = None
    """Token prices per million, for the cost audit (one for every judge, or per judge)."""
    families: dict[str, str] = field(default_factory=dict)
    """Judge and model names → family, for the self-preference audit."""
    baselines: bool = False
    """Add the shortcut baseline as a judge (:mod:`calibration.shortcut`)."""


@dataclass(frozen=True)
class CampaignReportFiles:
    """The report's two files: the METRICS.md JSON (``result.to_json()``) and the HTML report."""

    result: CalibrationResult
    html: str


@dataclass(frozen=True)
class CampaignReport:
    """Every part of a campaign's report, and its files."""

    calibration: CampaignCalibration
    comparisons: tuple[JudgeComparison, ...]
    judge_audit: JudgeAudit
    consistency: ConsistencyReport | None
    files: CampaignReportFiles


def build_campaign_report(
    engine: Engine, request: CampaignReportRequest, *, progress: ProgressBars = no_progress
) -> CampaignReport:
    """The campaign's report as ``request`` asks (the module's steps, in order)."""
    source = load_campaign(engine, request.campaign, judges=request.judges)
    if request.protocol is not None or request.scale is not None:
        chosen = protocol_on_scale(request.protocol or source.protocol.name, request.scale)
        # the campaign's threshold is in its own scale's points: the new scale's default
        source = replace(source, protocol=chosen, disagreement_threshold=None)
    fields = {
        "consensus": request.consensus,
        "exclude_annotators": human_rater_names(source.frame, request.exclude_annotators),
        "no_majority": request.no_majority,
        "unparsed": request.unparsed,
        "bootstrap": request.bootstrap,
        "seed": request.seed,
        "max_disagreements": request.max_disagreements,
        "by": request.by,
        "aggregate": request.aggregate,
        "judges": request.judges,
        "disagreement_threshold": source.disagreement_threshold,
    }
    fields.update(reference_exclusions(source, fields))
    # The closed sets arrive as the caller's text; CalibrationOptions.validate() checks each
    # one and names the valid values, so the Literal types hold once it has run.
    options = CalibrationOptions(protocol=source.protocol, **fields)  # type: ignore[arg-type]
    if request.baselines:
        source = with_shortcut_baseline_source(engine, source, options)
    total = request.bootstrap or None
    comparisons: list[JudgeComparison] = []
    for first, second in request.compare:
        with progress(f"{first} vs {second}", total) as advance:
            comparisons.append(
                compare_judges(
                    source.frame,
                    options,
                    first,
                    second,
                    overrides=source.overrides,
                    progress=advance,
                )
            )
    with progress("bootstrap resamples", total) as advance:
        calibration = calibrate_campaign(engine, source, progress=advance, **fields)
    rule = no_majority_rule(request.no_majority)
    with progress("judge audit", None):
        audit = judge_audit(
            engine,
            source,
            judges=request.judges,
            families=request.families,
            prices=request.prices,
            no_majority=rule,
            bootstrap=request.bootstrap,
            seed=request.seed,
        )
    consistency = None
    if request.consistency is not None:
        with progress("consistency", None):
            consistency = campaign_consistency(
                engine,
                *request.consistency,
                delta=request.delta,
                no_majority=rule,
                judges=request.judges,
                bootstrap=request.bootstrap,
                seed=request.seed,
            )
    files = _files(engine, request, calibration, comparisons, audit, consistency)
    return CampaignReport(calibration, tuple(comparisons), audit, consistency, files)


def _files(
    engine: Engine,
    request: CampaignReportRequest,
    calibration: CampaignCalibration,
    comparisons: list[JudgeComparison],
    audit: JudgeAudit,
    consistency: ConsistencyReport | None,
) -> CampaignReportFiles:
    """The JSON result with every extra section the report has, and the HTML report."""
    result = calibration.report.result.with_extras(
        comparisons=comparisons or None, judge_audit=audit, consistency=consistency
    )
    html = report_html(
        calibration.report,
        engine,
        request.campaign,
        comparisons=comparisons,
        judge_audit=audit,
        consistency=consistency,
    )
    return CampaignReportFiles(result, html)
