"""Training throughput of a real critic on the CPU: float32 (the baseline) against bf16 mixed
precision (``critic train``'s default on a CPU with bf16 instructions), same SFT file, same steps,
same seed, in one run.

Run (prints JSON)::

    .venv/bin/python bench/train_precision.py --base-model smollm2 --data sft.jsonl

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
from critic.training import TrainConfig, train_critic  # noqa: E402


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--last-layers", type=int, default=8, help="LoRA on the last N layers")
    args = parser.parse_args()
    if not cpu_has_bf16():
        raise SystemExit("this CPU has no bf16 instructions: critic train stays in float32 here")
    folder = Path(tempfile.mkdtemp(prefix="train-precision-"))

    def train(name: str, steps: int, bf16: bool) -> dict:
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
            )
        )
        return {
            "tokens": result.train_tokens,
            "seconds": round(result.seconds, 1),
            "tokens_per_s": round(result.tokens_per_second, 1),
            "last_loss": result.losses[-1][1],
        }

    figures: dict = {"load_average_before": os.getloadavg(), "steps": args.steps}
    for name, bf16 in (("float32", False), ("bf16", True)):
        train(f"{name}-warm-up", 2, bf16)
        figures[name] = train(name, args.steps, bf16)
    figures["bf16_vs_float32"] = round(
        figures["bf16"]["tokens_per_s"] / figures["float32"]["tokens_per_s"], 2
    )
    figures["load_average_after"] = os.getloadavg()
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
