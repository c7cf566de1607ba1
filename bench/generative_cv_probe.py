"""Which learning rate (or epochs) for the generative critic? Grouped folds of the train split only.

``bench/judge_quality.py`` trains the generative critic with settings fixed in advance (one
epoch, learning rate 2e-4), and it learns the label prior, not the judging. This probe asks
whether another setting learns more, without reading the test split: it splits the **train
split** of ``sft.jsonl`` into K folds grouped by item (the head's folds,
:func:`critic.head.group_folds`), and for each of the first ``--use-folds`` folds and each
setting runs the command a user would type::

    critiquelab critic train --data fold.jsonl --base-model BASE -o DIR --lora \\
        --lora-last-layers 8 --epochs E --learning-rate LR --seed 0 --eval-max-new-tokens 8

where ``fold.jsonl`` holds the train split only, the fold's items marked ``eval``. ``critic
train`` then judges the held-out fold (greedy, the shown order of the file) and calibrates it
against the human labels (``final/calibration.json``). The probe reports, per fold and setting,
accuracy with ties, kappa and prefer-first on the held-out fold, the mean training loss of the
last logged steps, and the majority class of the fold's training part as the floor::

    .venv/bin/python bench/generative_cv_probe.py --work /tmp/jq/run11 --base-model smollm2 \\
        --settings 2e-4:1,1e-3:1 --use-folds 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from critic.head import group_folds  # noqa: E402


def fold_file(sft: Path, fold: int, folds: int, seed: int, target: Path) -> dict[str, int]:
    """Write the train split of ``sft`` with fold ``fold``'s items marked ``eval`` (the test split
    left out); return the records in each part."""
    rows = [json.loads(line) for line in sft.open(encoding="utf-8")]
    train = [row for row in rows if row["meta"].get("split", "train") == "train"]
    assignment = group_folds([str(row["meta"]["item_id"]) for row in train], folds, seed)
    counts: Counter[str] = Counter()
    with target.open("w", encoding="utf-8") as out:
        for row, part in zip(train, assignment, strict=True):
            row["meta"]["split"] = "eval" if part == fold else "train"
            counts[row["meta"]["split"]] += 1
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return dict(counts)


def majority_floor(fold_path: Path) -> float:
    """Accuracy with ties, on the fold's eval part, of the training part's most frequent label."""
    rows = [json.loads(line)["meta"] for line in fold_path.open(encoding="utf-8")]
    train = Counter(str(meta["label"]) for meta in rows if meta["split"] == "train")
    common = train.most_common(1)[0][0]
    held = [str(meta["label"]) for meta in rows if meta["split"] == "eval"]
    return sum(label == common for label in held) / len(held)


def train_and_judge(
    fold_path: Path,
    base_model: Path,
    output: Path,
    rate: float,
    epochs: float,
    args: argparse.Namespace,
) -> dict[str, Any]:
    command = [
        str(Path(sys.executable).parent / "critiquelab"), "--json", "--quiet",
        "critic", "train", "--data", str(fold_path), "--base-model", str(base_model),
        "-o", str(output), "--lora", "--lora-last-layers", str(args.last_layers),
        "--epochs", str(epochs), "--learning-rate", str(rate), "--seed", str(args.seed),
        "--eval-max-new-tokens", "8",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    judged = json.loads(Path(summary["calibration_file"]).read_text())["judges"]["critic"]
    last = [loss for _step, loss in summary["losses"][-5:]]
    return {
        "learning_rate": rate,
        "epochs": epochs,
        "seconds": round(time.perf_counter() - started, 1),
        "steps": summary["steps"],
        "last_losses_mean": round(sum(last) / len(last), 4),
        "acc_with_tie": judged["acc_with_tie"],
        "acc_with_tie_ci": judged["ci"]["acc_with_tie"],
        "kappa": judged["kappa"],
        "prefer_first": judged["prefer_first"],
        "units": judged["n"],
    }


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="judge_quality.py's --work")
    parser.add_argument("--base-model", type=Path, required=True)
    parser.add_argument(
        "--settings", default="2e-4:1,1e-3:1", help="learning rate:epochs, comma-separated"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--use-folds", type=int, default=1, help="run the first N folds only")
    parser.add_argument("--last-layers", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="folder (default WORK/gcv)")
    args = parser.parse_args()
    settings = [tuple(float(part) for part in s.split(":")) for s in args.settings.split(",")]
    out = args.out or args.work / "gcv"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for fold in range(args.use_folds):
        path = out / f"fold{fold}.jsonl"
        counts = fold_file(args.work / "sft.jsonl", fold, args.folds, args.seed, path)
        floor = majority_floor(path)
        for rate, epochs in settings:
            result = train_and_judge(
                path,
                args.base_model,
                out / f"fold{fold}-lr{rate:g}-e{epochs:g}",
                rate,
                epochs,
                args,
            )
            rows.append({"fold": fold, **counts, "majority_floor": floor, **result})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return {"rows": rows, "uptime": uptime.stdout.strip()}  # the load average beside the figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
