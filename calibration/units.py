"""From the long judgement frame to arrays over units: humans, reference, judges, metadata.

The frame has the columns of :data:`schemas.records.JUDGEMENT_FRAME_COLUMNS` (one row per unit,
rater, shown order, sample). Units are sorted by key so that a seed always draws the same units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from calibration.errors import CalibrationInputError
from calibration.pairwise import LABELS
from calibration.reference import (
    NoMajorityRule,
    ReferenceRule,
    human_reference,
    with_overrides,
)
from calibration.scale import Scale
from schemas.ids import HUMAN_PREFIX
from schemas.option_text import OptionText
from schemas.protocols import Protocol
from schemas.records import JUDGEMENT_FRAME_COLUMNS

REQUIRED_COLUMNS: tuple[str, ...] = ("unit", "rater", "kind", "value")
META_COLUMNS: tuple[str, ...] = ("item_id", "task", "category", "group", "model")


@dataclass(frozen=True)
class UnitData:
    """Everything calibration needs, aligned over ``units``.

    ``humans``: raters × units values (pairwise coded 0 = A, 1 = B, 2 = tie), NaN = none;
    ``reference``: per unit, NaN = no reference; ``adjudicated``: per unit, reference came from
    an adjudication; ``meta``: one row per unit (item_id, task, category, group, model, extras).
    """

    protocol: Protocol
    units: np.ndarray
    meta: pd.DataFrame
    raters: list[str]
    humans: np.ndarray
    reference: np.ndarray
    adjudicated: np.ndarray
    frame: pd.DataFrame
    row_units: np.ndarray
    """Per row of ``frame``, the index of its unit in ``units``: found once for every row, so
    that selecting a judge's rows does not look each key up again."""
    weights: np.ndarray | None = None
    """Per rater of ``raters``, their weight in the reference (1.0 under a per-unit rule)."""
    excluded: tuple[str, ...] = ()
    """Raters left out of ``raters``, ``humans`` and the reference (``exclude_annotators``)."""
    all_raters: tuple[str, ...] = ()
    """Every human rater, excluded ones too, sorted; ``all_humans`` their matrix."""
    all_humans: np.ndarray | None = None

    @property
    def n_units(self) -> int:
        return int(self.units.size)

    def judge_rows(self, judge: str) -> pd.DataFrame:
        """The judge's rows of ``frame``, with the index of their unit (``unit_index``)."""
        chosen = self._judge_positions.get(judge, np.zeros(0, dtype=np.int64))
        return self.frame.iloc[chosen].assign(unit_index=self.row_units[chosen])

    def judge_scores(self, judge: str, column: str = "code") -> np.ndarray:
        """Per unit, the mean of the judge's parsed values in ``column`` (``code``, or
        ``expected_score``): samples and shown orders averaged, NaN where it has none.

        Computed once per judge and column (a calibration reads each judge's scores for its
        kernel, its leave-one-out, its maps, the leaderboards and the model estimates); each call
        returns a fresh array.
        """
        key = (judge, column)
        if key not in self._score_means:
            rows = self.judge_rows(judge)
            values = pd.to_numeric(rows[column], errors="coerce")
            means = values.groupby(rows["unit_index"]).mean()
            result = np.full(self.n_units, np.nan)
            result[means.index.to_numpy()] = means.to_numpy(dtype=np.float64)
            self._score_means[key] = result
        return self._score_means[key].copy()

    @cached_property
    def _score_means(self) -> dict[tuple[str, str], np.ndarray]:
        return {}

    @cached_property
    def _judge_positions(self) -> dict[str, np.ndarray]:
        """Per model judge, the positions of its rows in ``frame`` (ascending): found in one pass,
        since a calibration selects each judge's rows several times (scores, coverage, parse
        status, details, groups) and a mask over the whole frame per selection cost
        judges × rows."""
        model = np.flatnonzero((self.frame["kind"] == "model").to_numpy())
        codes, names = pd.factorize(self.frame["rater"].to_numpy()[model])
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
        return {str(name): model[order[bounds[k] : bounds[k + 1]]] for k, name in enumerate(names)}


def normalise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Check the required columns and add the optional ones (None / 'AB' / 'ok'); a
    ``rationale`` column is kept when there is one, never added (details read the rationales of
    the units they list: :func:`calibration.details.with_rationales`)."""
    missing = [column for column in REQUIRED_COLUMNS if column not in frame.columns]
    if missing:
        raise CalibrationInputError(
            "the judgement frame lacks column(s) "
            + ", ".join(missing)
            + "; build it with data.readmodels.frames.campaign_judgement_frame or "
            "calibration.io.judgement_frame"
        )
    frame = frame.copy(deep=False)  # setting a column below replaces it: the caller's stay
    defaults = {
        "shown_order": "AB",
        "parse_status": "ok",
        "expected_score": np.nan,
    }
    for column in JUDGEMENT_FRAME_COLUMNS:
        if column not in frame.columns and column != "rationale":  # no metric reads rationales
            frame[column] = defaults.get(column)
    frame["unit"] = frame["unit"].astype(str)
    frame["rater"] = frame["rater"].astype(str)
    frame["shown_order"] = frame["shown_order"].fillna("AB").astype(str)
    kinds = set(frame["kind"].unique()) - {"human", "model"}
    if kinds:
        raise CalibrationInputError(
            f"judgement kind(s) {sorted(map(str, kinds))} are not 'human' or 'model'"
        )
    return frame


def prepare_units(
    frame: pd.DataFrame,
    protocol: Protocol,
    *,
    rule: ReferenceRule,
    no_majority: NoMajorityRule,
    overrides: dict[str, object] | None = None,
    exclude: tuple[str, ...] = (),
) -> UnitData:
    """Align the frame over its units and compute the reference (adjudication, else the humans'
    reference under ``rule``, without the raters in ``exclude``)."""
    frame = normalise_frame(frame)
    if frame.empty:
        raise CalibrationInputError("there are no judgements to calibrate")
    frame = _coded_values(frame, protocol)
    # Codes of the sorted distinct keys: each unit's index in ``units``, without a binary search
    # of every row's key among millions of strings.
    index, distinct = pd.factorize(frame["unit"], sort=True)
    units = np.asarray(distinct, dtype=object).astype(str)
    is_human = (frame["kind"] == "human").to_numpy()
    humans = pd.DataFrame(
        {
            "rater": frame["rater"].to_numpy()[is_human],
            "unit_index": index[is_human],
            "code": frame["code"].to_numpy()[is_human],
        }
    )
    humans = humans[humans["code"].notna()]
    raters = sorted(humans["rater"].unique())
    matrix = np.full((len(raters), units.size), np.nan)
    if raters:
        per_cell = humans.groupby(["rater", "unit_index"], sort=False)["code"].first()
        rows = np.searchsorted(np.array(raters, dtype=object), per_cell.index.get_level_values(0))
        matrix[rows, per_cell.index.get_level_values(1)] = per_cell.to_numpy(dtype=np.float64)
    kept = np.array([rater not in exclude for rater in raters], dtype=bool)
    if raters and kept.any():
        fitted = human_reference(
            matrix[kept],
            rule,
            no_majority=no_majority,
            pairwise=not protocol.is_pointwise,
            scale=Scale.of(protocol) if protocol.is_pointwise else None,
        )
        reference, weights = fitted.values, fitted.weights
    else:
        reference, weights = np.full(units.size, np.nan), np.ones(int(kept.sum()))
    adjudicated = np.full(units.size, np.nan)
    for key, value in (overrides or {}).items():
        position = np.searchsorted(units, str(key))
        if position < units.size and units[position] == str(key):
            adjudicated[position] = _code(value, protocol, where=f"adjudication of {key}")
    reference = with_overrides(reference, adjudicated)
    meta = _unit_meta(frame, units, index)
    return UnitData(
        protocol,
        units,
        meta,
        [rater for rater, keep in zip(raters, kept, strict=True) if keep],
        matrix[kept],
        reference,
        ~np.isnan(adjudicated),
        frame,
        index,
        weights=weights,
        excluded=tuple(rater for rater in raters if rater in exclude),
        all_raters=tuple(raters),
        all_humans=matrix,
    )


def _coded_values(frame: pd.DataFrame, protocol: Protocol) -> pd.DataFrame:
    if protocol.is_pointwise:
        raw = frame["value"]
        code = pd.to_numeric(raw, errors="coerce").astype(np.float64)
        bad = raw.notna() & code.isna()
        if bad.any():
            row = frame[bad].iloc[0]
            raise CalibrationInputError(
                f"rater {row['rater']} on unit {row['unit']}: value {row['value']!r} is not a "
                f"number, but {protocol.name} judgements are scores"
            )
        (low, high), tol = protocol.bounds, protocol.tolerance
        off = (code < low - tol) | (code > high + tol)
        if off.any():
            row = frame[off].iloc[0]
            raise CalibrationInputError(
                OptionText(
                    "rater {rater} on unit {unit}: score {value} is off the {name} scale "
                    "({scale_text}); fix the data or give {protocol} score {scale} MIN:MAX[:STEP]",
                    rater=row["rater"],
                    unit=row["unit"],
                    value=row["value"],
                    name=protocol.name,
                    scale_text=protocol.describe_scale(),
                )
            )
        return frame.assign(code=code)
    codes = frame["value"].map(lambda v: float(LABELS.index(v)) if v in LABELS else np.nan)
    bad = frame["value"].notna() & codes.isna() & frame["value"].map(lambda v: v == v)
    if bad.any():
        row = frame[bad].iloc[0]
        raise CalibrationInputError(
            f"rater {row['rater']} on unit {row['unit']}: preference {row['value']!r} is not "
            "one of A, B, tie (canonical order)"
        )
    return frame.assign(code=codes.astype(np.float64))


def _code(value: object, protocol: Protocol, *, where: str) -> float:
    if value is None:
        return np.nan
    if protocol.is_pointwise:
        return protocol.validate_score(value, field_name=where)
    return float(LABELS.index(protocol.validate_preference(value, field_name=where)))


def _unit_meta(frame: pd.DataFrame, units: np.ndarray, index: np.ndarray) -> pd.DataFrame:
    extra = [c for c in frame.columns if c not in JUDGEMENT_FRAME_COLUMNS and c != "code"]
    columns = list(META_COLUMNS) + extra
    firsts = frame.assign(unit_index=index).groupby("unit_index")[columns].first()
    meta = firsts.reindex(range(units.size))
    meta.insert(0, "unit", units)
    return (
        meta.reset_index(drop=True).astype(object).where(meta.notna().reset_index(drop=True), None)
    )


def human_rater_names(frame: pd.DataFrame, names: Sequence[str]) -> tuple[str, ...]:
    """Annotators named by a user, as ``frame``'s raters: a campaign's humans are
    ``annotator:<login>`` there, so a login alone is accepted; an unknown name is kept as given,
    for calibration to name it beside those present."""
    present = set(frame.loc[frame["kind"] == "human", "rater"].astype(str))
    return tuple(
        f"{HUMAN_PREFIX}{name}"
        if name not in present and f"{HUMAN_PREFIX}{name}" in present
        else name
        for name in names
    )
