"""bench/annotator_quality.py on a tiny configuration: the pool keeps every unit's real labels,
always-"A" annotators are found, the clean pool's plain reference moves no judge's number, and
the JSON has the shape docs/ANNOTATOR_QUALITY.md reads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.annotator_quality import (
    POOL,
    contaminate,
    hanna_campaigns,
    main,
    make_pool,
    pandalm_campaign,
    split,
)


def test_the_pool_cuts_each_real_annotator_into_blocks_and_keeps_every_unit_label() -> None:
    campaign = pandalm_campaign()
    pool = make_pool(campaign, n=10, seed=3)

    assert pool.labels.shape == (POOL, 100)
    assert (~np.isnan(pool.labels)).sum(axis=1).tolist() == [10] * POOL
    for unit in range(100):  # three labels per unit, one from each real annotator, unchanged
        givers = np.flatnonzero(~np.isnan(pool.labels[:, unit]))
        assert sorted(pool.origin[givers]) == [0, 1, 2]
        assert sorted(pool.labels[givers, unit]) == sorted(campaign.humans[:, pool.units[unit]])
    labels, careless = contaminate(campaign, pool, "constant", 0.2, seed=3, n=10)
    assert careless.sum() == 6
    assert set(labels[careless][~np.isnan(labels[careless])]) == {0.0}  # always "A"
    assert np.array_equal(labels[~careless], pool.labels[~careless], equal_nan=True)


def test_a_tiny_run_finds_always_a_annotators_and_the_clean_pool_moves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "aq.json"
    main(["--case", "pandalm", "--seeds", "1", "--labels", "20", "--shares", "0.1",
          "--careless", "constant", "--bootstrap", "200", "--out", str(out)])  # fmt: skip

    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    keys = {"command", "settings", "wall_s", "load_average_before", "load_average_after",
            "targets", "detection", "detection_by_campaign", "judges_error"}  # fmt: skip
    assert keys <= set(report)
    # share 0, the clean pool, is careless "none"
    flags = {(row["careless"], row["detector"]): row for row in report["detection"]}
    found = flags[("constant", "flags")]
    assert (found["tp"], found["fn"], found["recall"]) == (3, 0, 1.0)  # 3 of 30 always "A"
    assert len(found["recall_ci95"]) == 2
    clean = [row for row in report["judges_error"] if row["careless"] == "none"]
    assert {row["judge"] for row in clean} == {"gpt-3.5-turbo", "pandalm-7b", "all judges"}
    # the clean pool holds every unit's three real labels: its majority is the real one
    assert all(row["plain"] == 0.0 for row in clean)
    assert flags[("none", "flags")]["tp"] == 0


def test_the_dev_and_test_halves_split_hannas_prompts_and_pandalms_pairs() -> None:
    for campaign in (pandalm_campaign(), hanna_campaigns()[0]):
        dev, test = split(campaign, "dev"), split(campaign, "test")
        assert not set(dev.groups) & set(test.groups)  # no story prompt (pair) in both
        assert dev.humans.shape[1] + test.humans.shape[1] == campaign.humans.shape[1]
        for judge, values in test.judges.items():
            assert values.size == test.humans.shape[1]
            assert np.array_equal(values, campaign.judges[judge][campaign.groups % 2 == 0],
                                  equal_nan=True)  # fmt: skip
    assert split(pandalm_campaign(), "dev").humans.shape[1] == 499  # n = 50 takes all 499


def test_the_sweep_that_chose_the_constants_runs_on_the_dev_half(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--case", "hanna", "--criteria", "RE", "--split", "dev", "--sweep", "--seeds", "1",
          "--labels", "20", "--shares", "0.2", "--careless", "constant"])  # fmt: skip
    table = capsys.readouterr().out
    assert "| evidence >= 3 nats | hanna | 20 |" in table
    assert "| gold, >= 5 answers | hanna | 20 |" in table
