"""``critiquelab calibrate``'s judge audits: ``--consistency`` and the bias and cost audit
(``judge_audit`` in ``--json``, a section in ``--html``).

:mod:`annotate_app.cli.calibrate` calls :func:`read_audit_inputs` once for the options; with
``--campaign`` the audits are steps of the campaign's report
(:func:`annotate_app.campaign_report.build_campaign_report`), and :func:`consistency_only` runs
``--consistency`` alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from annotate_app.campaign_calibration import (
    campaign_consistency,
    check_one_dataset,
)
from annotate_app.cli.context import CliState
from calibration.audits import JudgeAudit, parse_families
from calibration.consistency import ConsistencyReport
from calibration.cost import Prices, parse_prices, price_problem
from calibration.errors import CalibrationInputError
from calibration.reference import NoMajorityRule
from calibration.report_audits import (
    audit_section,
    audit_text,
    consistency_section,
    consistency_text,
)
from data.io.importers.errors import InvalidRecord
from data.io.importers.sources import MAX_SMALL_FILE_BYTES, read_json_document
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope


@dataclass(frozen=True)
class AuditInputs:
    """The audit options, read and checked before any long computation."""

    consistency: tuple[str, str] | None = None
    delta: float | None = None
    prices: dict[str, Prices] | Prices | None = None
    families: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditOutputs:
    """What the audits add to the command's JSON, HTML report and terminal text."""

    consistency: ConsistencyReport | None = None
    judge_audit: JudgeAudit | None = None

    def json(self) -> dict:
        result = {}
        if self.judge_audit is not None:
            result["judge_audit"] = self.judge_audit.model_dump(mode="json")
        if self.consistency is not None:
            result["consistency"] = self.consistency.model_dump(mode="json")
        return result

    def html(self) -> list[str]:
        return [consistency_section(self.consistency), audit_section(self.judge_audit)]

    def text(self) -> str:
        parts = []
        if self.consistency is not None:
            parts.append(consistency_text(self.consistency))
        if self.judge_audit is not None:
            parts.append(audit_text(self.judge_audit))
        return "\n".join(parts)


def read_audit_inputs(
    consistency: tuple[str, str] | None,
    delta: float | None,
    price_in: float | None,
    price_out: float | None,
    prices_file: Path | None,
    families_file: Path | None,
    *,
    file_mode: bool,
) -> AuditInputs:
    """Check the audit options and read the price and family files (``file_mode``: the command
    reads judgement files, where there are no responses, usage or campaigns to audit)."""
    given = [
        name
        for name, value in (
            ("--consistency", consistency),
            ("--price-in", price_in),
            ("--price-out", price_out),
            ("--prices", prices_file),
            ("--families", families_file),
        )
        if value is not None
    ]
    if file_mode and given:
        raise CalibrationInputError(
            f"{', '.join(given)} audit campaigns in the database (responses, token usage); "
            "use them with --campaign, not with --judgments"
        )
    prices: dict[str, Prices] | Prices | None = None
    if (price_in is None) != (price_out is None):
        raise CalibrationInputError(
            "give both --price-in and --price-out (per million tokens), or --prices FILE"
        )
    if price_in is not None and prices_file is not None:
        raise CalibrationInputError(
            "give either --price-in/--price-out (every judge) or --prices FILE, not both"
        )
    if price_in is not None and price_out is not None:
        for flag, price in (("--price-in", price_in), ("--price-out", price_out)):
            if price_problem(price) is not None:
                raise CalibrationInputError(f"{flag} is {price}; give a finite price ≥ 0")
        prices = Prices(input=price_in, output=price_out)
    if prices_file is not None:
        prices = parse_prices(_read_json(prices_file, "--prices"), f"--prices {prices_file}")
    families = {}
    if families_file is not None:
        families = parse_families(
            _read_json(families_file, "--families"), f"--families {families_file}"
        )
    if delta is not None and not delta >= 0:
        raise CalibrationInputError(f"--delta must be ≥ 0 (scale points), got {delta}")
    return AuditInputs(consistency, delta, prices, families)


def consistency_only(
    cli: CliState,
    inputs: AuditInputs,
    *,
    judges: list[str] | None,
    no_majority: NoMajorityRule,
    bootstrap: int,
    seed: int,
) -> AuditOutputs:
    """``calibrate --consistency P Q`` (alone, or beside ``--campaign``)."""
    assert inputs.consistency is not None
    pointwise, pairwise = inputs.consistency
    check_consistency_pair(cli, inputs.consistency)
    with cli.progress("consistency", total=None):
        report = campaign_consistency(
            cli.engine(),
            pointwise,
            pairwise,
            delta=inputs.delta,
            no_majority=no_majority,
            judges=judges,
            bootstrap=bootstrap,
            seed=seed,
        )
    return AuditOutputs(consistency=report)


def check_consistency_pair(cli: CliState, pair: tuple[str, str]) -> None:
    """``--consistency POINTWISE PAIRWISE``: two campaigns of one dataset, the one with scores
    first (checked before any long computation)."""
    with session_scope(cli.engine()) as session:
        first, second = get_campaign(session, pair[0]), get_campaign(session, pair[1])
        check_one_dataset(first, second)  # before the order: two campaigns that cannot pair
        _check_order(first.name, first.protocol, second.name, second.protocol)


def _check_order(first: str, first_protocol: str, second: str, second_protocol: str) -> None:
    """``--consistency POINTWISE PAIRWISE``: the campaign with scores first."""
    usage = "--consistency POINTWISE PAIRWISE"
    if first_protocol == "pairwise" and second_protocol != "pairwise":
        raise CalibrationInputError(
            f"{usage}: the campaign with scores comes first; give --consistency {second} {first}"
        )
    if second_protocol != "pairwise":
        raise CalibrationInputError(f"{usage}: {second} is {second_protocol}, not pairwise")
    if first_protocol == "pairwise":
        raise CalibrationInputError(f"{usage}: {first} is pairwise too; name one with scores")


def _read_json(path: Path, option: str) -> object:
    """A small JSON file given to ``option``, read by the one reader's rules (a regular file of
    at most :data:`~data.io.importers.sources.MAX_SMALL_FILE_BYTES`, strict JSON)."""
    try:
        return read_json_document(path, MAX_SMALL_FILE_BYTES)
    except InvalidRecord as error:
        raise CalibrationInputError(f"{option} {error}") from None
