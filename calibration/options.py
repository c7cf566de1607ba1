"""The options of a calibration: every one that changes a number is written into the result."""

from __future__ import annotations

from dataclasses import dataclass

from calibration.bootstrap import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from calibration.disagreement import disagreement_threshold
from calibration.errors import CalibrationInputError
from calibration.grouped import AggregateMode, check_aggregate
from calibration.pairwise import UnparsedRule, check_unparsed_rule
from calibration.reference import (
    ConsensusRule,
    NoMajorityRule,
    ReferenceRule,
    check_consensus,
    default_rule,
    per_unit_rule,
)
from calibration.scale import Scale
from schemas.bounds import BOOTSTRAP
from schemas.option_text import OptionText
from schemas.protocols import Protocol


@dataclass(frozen=True)
class CalibrationOptions:
    """Every option that changes a number; all of them are written into the report."""

    protocol: Protocol
    consensus: ReferenceRule | None = None
    """Reference rule (``--reference``); default ``mean`` for scores, ``majority`` for
    preferences; ``dawid-skene`` / ``mace`` weigh each annotator by a latent-class model."""
    exclude_annotators: tuple[str, ...] = ()
    """Annotators (rater names as in the frame) left out of the reference and of the human
    ceiling; the annotators table still lists them, marked excluded."""
    exclusion_reasons: tuple[tuple[str, str], ...] = ()
    """Why annotators of ``exclude_annotators`` are left out, as (name, reason) pairs: ``held``
    or ``retired`` (their standing in the campaign, left out by itself); one not named here was
    ``listed`` by the user."""
    no_majority: NoMajorityRule = "tie"
    unparsed: UnparsedRule = "wrong"
    bootstrap: int = DEFAULT_BOOTSTRAP
    """Resamples for the intervals; 0 turns intervals off."""
    seed: int = DEFAULT_SEED
    by: tuple[str, ...] | None = None
    """Fields to group by; default ``task`` and ``category`` where the units have them."""
    aggregate: AggregateMode = "mean"
    judges: tuple[str, ...] | None = None
    """Judges to report (default: every model judge in the frame)."""
    calibration_fraction: float = 0.5
    max_disagreements: int = 25
    """How many of each judge's disagreements the report lists (largest gap first)."""
    disagreement_threshold: float | None = None
    """Pointwise: the smallest |judge − reference| that is a disagreement (None: 20% of the
    scale's width; a campaign's report uses the campaign's); pairwise None
    (:mod:`calibration.disagreement`)."""
    routing: str | None = None
    """How a campaign chose the units humans label (its routing mode; None: not recorded, as for
    files): under judge-guided routing the labelled units are no random sample, and the model
    estimates give a reason instead of an interval (PROTOCOLS.md)."""

    @property
    def reference_rule(self) -> ReferenceRule:
        if self.consensus is not None:
            return self.consensus
        return default_rule(pairwise=not self.protocol.is_pointwise)

    @property
    def loo_rule(self) -> ConsensusRule:
        """The per-unit rule of the leave-one-out consensus of the others: the reference rule
        itself, or the protocol's default under a latent-class reference."""
        return per_unit_rule(self.reference_rule, pairwise=not self.protocol.is_pointwise)

    def validate(self) -> None:
        pairwise = not self.protocol.is_pointwise
        discrete = pairwise or Scale.of(self.protocol).is_discrete
        check_consensus(self.reference_rule, self.no_majority, pairwise=pairwise, discrete=discrete)
        check_unparsed_rule(self.unparsed)
        check_aggregate(self.aggregate)
        if (problem := BOOTSTRAP.problem(self.bootstrap)) is not None:
            raise CalibrationInputError(problem)
        disagreement_threshold(self.protocol, self.disagreement_threshold)
        if self.max_disagreements < 0:
            raise CalibrationInputError(
                OptionText(
                    "{max_disagreements} {value} must be 0 or more", value=self.max_disagreements
                )
            )
        if not 0 < self.calibration_fraction < 1:
            raise CalibrationInputError("the calibration split fraction must be between 0 and 1")
