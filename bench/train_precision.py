"""Training throughput of a real critic on the CPU, same SFT file, same steps, same seed, in one
run: float32 (the baseline) against bf16 mixed precision (``critic train``'s default on a CPU with
bf16 instructions), each with transformers' default loss over every position's logits; and bf16
with the logits computed only where the loss reads them (``answer-logits``, the default of
``critic train``: :class:`critic.fine_tune.AnswerLogitsTrainer`).

Run (prints JSON)::

    .venv/bin/python bench/train_precision.py --base-model smollm2 --data sft.jsonl
    .venv/bin/python bench/train_precision.py --base-model gemma3 --data sft.jsonl \
        --modes bf16,bf16-answer-logits

``--data`` is any SFT file (``critiquelab export sft``); the figures in docs/JUDGE_QUALITY.md use
PandaLM's (``bench/judge_quality.py`` writes it). Each mode first trains two steps untimed (thread
pools, allocator, lazy imports).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from critic.modeling import cpu_has_bf16  # noqa: E402
from critic.train_config import TrainConfig  # noqa: E402
from critic.training import train_critic  # noqa: E402

MODES = {  # name: (bf16, logits only where the loss reads them)
    "float32": (False, False),
    "bf16": (True, False),
    "bf16-answer-logits": (True, True),
}


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--last-layers", type=int, default=8, help="LoRA on the last N layers")
    parser.add_argument("--modes", default=",".join(MODES), help="a subset of " + ",".join(MODES))
    args = parser.parse_args()
    unknown = set(args.modes.split(",")) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown --modes {sorted(unknown)}: choose from {', '.join(MODES)}")
    if not cpu_has_bf16():
        raise SystemExit("this CPU has no bf16 instructions: critic train stays in float32 here")
    folder = Path(tempfile.mkdtemp(prefix="train-precision-"))

    def train(name: str, steps: int, bf16: bool, answer_logits_only: bool) -> dict:
        result = train_critic(
            TrainConfig(
                data=args.data,
                base_model=args.base_model,
                output_dir=folder / name,
                lora=True,
                lora_last_layers=args.last_layers,
                max_steps=steps,
                batch_size=4,
                save_steps=10_000,
                evaluate=False,
                bf16=bf16,
                answer_logits_only=answer_logits_only,
            )
        )
        return {
            "tokens": result.train_tokens,
            "seconds": round(result.seconds, 1),
            "tokens_per_s": round(result.tokens_per_second, 1),
            "last_loss": result.losses[-1][1],
        }

    figures: dict = {"load_average_before": os.getloadavg(), "steps": args.steps}
    for name in args.modes.split(","):
        train(f"{name}-warm-up", 2, *MODES[name])
        figures[name] = train(name, args.steps, *MODES[name])
    for faster, slower in (("bf16", "float32"), ("bf16-answer-logits", "bf16")):
        if faster in figures and slower in figures:
            figures[f"{faster}_vs_{slower}"] = round(
                figures[faster]["tokens_per_s"] / figures[slower]["tokens_per_s"], 2
            )
    figures["load_average_after"] = os.getloadavg()
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
