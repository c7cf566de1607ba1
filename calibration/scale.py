"""The score scale that pointwise metrics need: range, step (None = continuous), percent."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schemas.protocols import Protocol


@dataclass(frozen=True)
class Scale:
    """A pointwise scale: ``low``..``high`` in steps of ``step`` (``None``: continuous)."""

    low: float
    high: float
    step: float | None = None
    percent: bool = False

    @classmethod
    def of(cls, protocol: Protocol) -> Scale:
        """The scale of a pointwise protocol."""
        if not protocol.is_pointwise:
            raise ValueError(f"protocol {protocol.name!r} is pairwise: it has no score scale")
        low, high = protocol.bounds
        return cls(
            low,
            high,
            None if protocol.step is None else float(protocol.step),
            protocol.percent,
        )

    @property
    def is_discrete(self) -> bool:
        return self.step is not None

    @property
    def discrete_step(self) -> float:
        """The step of a discrete scale; a continuous scale has none."""
        if self.step is None:
            raise ValueError("a continuous scale has no points")
        return self.step

    @property
    def n_points(self) -> int:
        return round((self.high - self.low) / self.discrete_step) + 1

    def points(self) -> np.ndarray:
        """Every scale point, ascending."""
        return self.low + np.arange(self.n_points) * self.discrete_step

    def point_index(self, values: np.ndarray) -> np.ndarray:
        """Index of the scale point each value rounds to, half up (6.5 → 7 on a step of 1).

        A tolerance of 1e-9 steps absorbs float noise (0.30000000000000004 is 0.3).
        """
        step = self.discrete_step
        index = np.floor((np.asarray(values, dtype=np.float64) - self.low) / step + 0.5 + 1e-9)
        return np.clip(index, 0, self.n_points - 1).astype(np.int64)

    def round(self, values: np.ndarray) -> np.ndarray:
        """Values rounded half up to the nearest scale point."""
        return self.points()[self.point_index(values)]
