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
        return cls(
            float(protocol.scale_min),  # type: ignore[arg-type]
            float(protocol.scale_max),  # type: ignore[arg-type]
            None if protocol.step is None else float(protocol.step),
            protocol.percent,
        )

    @property
    def is_discrete(self) -> bool:
        return self.step is not None

    @property
    def n_points(self) -> int:
        if self.step is None:
            raise ValueError("a continuous scale has no points")
        return round((self.high - self.low) / self.step) + 1

    def points(self) -> np.ndarray:
        """Every scale point, ascending."""
        return self.low + np.arange(self.n_points) * float(self.step)  # type: ignore[arg-type]

    def point_index(self, values: np.ndarray) -> np.ndarray:
        """Index of the scale point each value rounds to, half up (6.5 → 7 on a step of 1).

        A tolerance of 1e-9 steps absorbs float noise (0.30000000000000004 is 0.3).
        """
        step = float(self.step)  # type: ignore[arg-type]
        index = np.floor((np.asarray(values, dtype=np.float64) - self.low) / step + 0.5 + 1e-9)
        return np.clip(index, 0, self.n_points - 1).astype(np.int64)

    def round(self, values: np.ndarray) -> np.ndarray:
        """Values rounded half up to the nearest scale point."""
        return self.points()[self.point_index(values)]
