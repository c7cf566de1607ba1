"""What ``calibrate --baselines`` costs and shows, on PandaLM's real test set (file mode).

PandaLM (``tests/fixtures/pandalm``: 999 pairs, three human labels, GPT-3.5 and PandaLM-7B as
judges) converted as ``bench/pandalm.py`` does. In one run: the calibration without the baseline
(the reference point), reading the responses' facts from the dataset file, the cross-fitted fit
(:func:`calibration.analysis.with_shortcut_baseline`), and the calibration with it; then each
judge's ``acc_with_tie`` with its bootstrap interval, the baseline beside the real judges.

Usage: ``python bench/shortcut_baseline.py --out shortcut.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from calibration import CalibrationOptions, calibrate
from calibration.analysis import with_shortcut_baseline
from calibration.io import judgement_frame, with_response_metadata
from data.io.importers.reader import dataset_metadata, read_judgement_files
from data.readmodels.judge_facts import dataset_response_facts
from schemas.protocols import get_protocol

# bench/ is a folder of scripts: siblings are imported by their own names (bench/judge_quality.py)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pandalm import convert, write_files  # noqa: E402

PANDALM = Path(__file__).resolve().parents[1] / "tests/fixtures/pandalm"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    protocol = get_protocol("pairwise")
    options = CalibrationOptions(protocol=protocol, bootstrap=args.bootstrap, unparsed="tie")
    result: dict = {"load_average_at_start": os.getloadavg(), "bootstrap": args.bootstrap}
    with tempfile.TemporaryDirectory() as folder:
        files = write_files(convert(PANDALM), Path(folder))
        lines = read_judgement_files([files[k] for k in ("humans", "gpt-3.5-turbo", "pandalm-7b")])
        frame = judgement_frame(((line.where, line.record) for line in lines), protocol)
        # the items of the responses, as `calibrate --dataset` adds them: the folds are items
        frame = with_response_metadata(frame, dataset_metadata(files["dataset"]))
        frame = frame.drop(columns="response_id")
        seconds = {}
        start = time.perf_counter()
        calibrate(frame, options)
        seconds["calibrate"] = time.perf_counter() - start
        start = time.perf_counter()
        facts = dataset_response_facts(files["dataset"])
        seconds["read_facts"] = time.perf_counter() - start
        start = time.perf_counter()
        with_baseline = with_shortcut_baseline(frame, options, facts)
        seconds["fit_baseline"] = time.perf_counter() - start
        start = time.perf_counter()
        report = calibrate(with_baseline, options)
        seconds["calibrate_with_baseline"] = time.perf_counter() - start
    result["seconds"] = seconds
    judges = report.result.model_dump(mode="json")["judges"]
    result["acc_with_tie"] = {
        name: {"value": block["acc_with_tie"], "ci": block["ci"]["acc_with_tie"]}
        for name, block in judges.items()
    }
    result["load_average_at_end"] = os.getloadavg()
    text = json.dumps(result, indent=2, default=list)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")


if __name__ == "__main__":
    main()
