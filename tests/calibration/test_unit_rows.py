"""How :func:`calibration.units.prepare_units` places the frame's rows among the units, and
:func:`calibration.frame_sha256`, each compared with a plain computation on random frames."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from calibration import analysis, frame_sha256
from calibration.units import prepare_units
from schemas.protocols import ALIGNMMBENCH

KEYS = ["r:b/1", "r:a/2", "r:é/3", "r:a/10", "r:Z", "r:a/1", "p:x|y", "r:ß"]
RATERS = ["annotator:ann", "annotator:bob", "judge-a", "judge-b"]


def _frame(seed: int) -> pd.DataFrame:
    """Random rows of random units (shuffled, with non-ASCII keys), humans and two judges."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    raters = rng.choice(RATERS, size=n)
    return pd.DataFrame(
        {
            "unit": rng.choice(KEYS[: int(rng.integers(1, len(KEYS) + 1))], size=n),
            "rater": raters,
            "kind": ["human" if r.startswith("annotator:") else "model" for r in raters],
            "value": pd.Series(
                [float(v) if v else None for v in rng.integers(0, 11, size=n)], dtype=object
            ),
            "shown_order": rng.choice(["AB", "BA"], size=n),
            "parse_status": rng.choice(["ok", "ok", "unparsed"], size=n),
        }
    )


@pytest.mark.parametrize("seed", range(30))
def test_each_judge_row_names_the_index_of_its_unit(seed: int) -> None:
    frame = _frame(seed)
    frame.loc[frame.index[::5], "shown_order"] = None  # normalised to AB, in its own copy
    before = frame.copy(deep=True)
    data = prepare_units(frame, ALIGNMMBENCH, rule="mean", no_majority="tie")
    pd.testing.assert_frame_equal(frame, before)
    assert list(data.units) == sorted(set(frame["unit"]))
    for judge in ("judge-a", "judge-b"):
        rows = data.judge_rows(judge)
        wanted = [
            i
            for i, (r, k) in enumerate(zip(frame["rater"], frame["kind"], strict=True))
            if r == judge and k == "model"
        ]
        assert list(rows["unit"]) == [frame["unit"][i] for i in wanted]
        np.testing.assert_array_equal(
            rows["value"].to_numpy(dtype=float), frame["value"].to_numpy(dtype=float)[wanted]
        )
        assert [data.units[i] for i in rows["unit_index"]] == list(rows["unit"])
    for row, rater in enumerate(data.raters):  # the humans' matrix: each one's first score
        for column, unit in enumerate(data.units):
            scores = [
                v
                for u, r, v in zip(frame["unit"], frame["rater"], frame["value"], strict=True)
                if u == unit and r == rater and not pd.isna(v)
            ]
            expected = scores[0] if scores else np.nan
            np.testing.assert_equal(data.humans[row, column], expected)


@pytest.mark.parametrize("seed", range(10))
def test_the_frame_hash_written_in_blocks_is_the_hash_of_the_whole_text(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = _frame(seed)
    frame.loc[frame.index[::3], "parse_status"] = 'bad, "quoted"'  # CSV quoting
    frame.loc[frame.index[::4], "value"] = "A"
    columns = ["unit", "rater", "kind", "value", "shown_order", "parse_status"]
    text = frame[columns].astype(str).sort_values(columns).to_csv(index=False)
    monkeypatch.setattr(analysis, "_HASH_BLOCK", 7)
    assert frame_sha256(frame) == hashlib.sha256(text.encode()).hexdigest()
    assert frame_sha256(frame.sample(frac=1, random_state=seed)) == frame_sha256(frame)
