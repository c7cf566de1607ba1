"""Calibration of judges against humans: agreement metrics, human ceiling, bootstrap intervals,
leaderboards, calibration maps and the audit report (METRICS.md). Pure functions, no I/O
except the report writers: judgement files are read by the data layer's reader, and
:mod:`calibration.io` turns the typed records into the judgement frame.
"""

from calibration.alpha import ALPHA_LEVELS, AlphaData, krippendorff_alpha
from calibration.analysis import (
    CalibrationOptions,
    CalibrationReport,
    calibrate,
    frame_sha256,
)
from calibration.bootstrap import (
    DEFAULT_BOOTSTRAP,
    percentile_interval,
    unit_resample_counts,
    unit_resample_indices,
)
from calibration.ceiling import LeaveOneOut, others_consensus
from calibration.errors import CalibrationInputError
from calibration.grouped import AGGREGATE_MODES, aggregate, group_weights
from calibration.leaderboard import alignment_scores, model_scores, ranking_kendall
from calibration.maps import calibration_maps, fit_isotonic, fit_linear, item_split
from calibration.pairwise import (
    PAIRWISE_METRICS,
    UNPARSED_RULES,
    PairwiseKernel,
    confusion_metrics,
    pairwise_metrics,
)
from calibration.pointwise import (
    POINTWISE_METRICS,
    PointwiseKernel,
    alpha_interval,
    alpha_ordinal,
    bias,
    cosine,
    fuzzy_acc,
    kendall,
    mae,
    metrics_for,
    mse,
    pearson,
    percent_mae,
    qwk,
    rmse,
    smd,
    spearman,
    strict_acc,
)
from calibration.reference import CONSENSUS_RULES, consensus, with_overrides
from calibration.result import CalibrationResult, JudgeResult, MetricValue
from calibration.scale import Scale
from calibration.tables import ceiling_table, group_table, judge_table, model_table, select_units

__all__ = [
    "AGGREGATE_MODES",
    "ALPHA_LEVELS",
    "CONSENSUS_RULES",
    "DEFAULT_BOOTSTRAP",
    "PAIRWISE_METRICS",
    "POINTWISE_METRICS",
    "UNPARSED_RULES",
    "AlphaData",
    "CalibrationInputError",
    "CalibrationOptions",
    "CalibrationReport",
    "CalibrationResult",
    "JudgeResult",
    "LeaveOneOut",
    "MetricValue",
    "PairwiseKernel",
    "PointwiseKernel",
    "Scale",
    "aggregate",
    "alignment_scores",
    "alpha_interval",
    "alpha_ordinal",
    "bias",
    "calibrate",
    "calibration_maps",
    "ceiling_table",
    "group_table",
    "judge_table",
    "model_table",
    "select_units",
    "confusion_metrics",
    "consensus",
    "cosine",
    "fit_isotonic",
    "fit_linear",
    "frame_sha256",
    "fuzzy_acc",
    "group_weights",
    "item_split",
    "kendall",
    "krippendorff_alpha",
    "mae",
    "metrics_for",
    "model_scores",
    "mse",
    "others_consensus",
    "pairwise_metrics",
    "pearson",
    "percent_mae",
    "percentile_interval",
    "qwk",
    "ranking_kendall",
    "rmse",
    "smd",
    "spearman",
    "strict_acc",
    "unit_resample_counts",
    "unit_resample_indices",
    "with_overrides",
]
