"""Critic speed on a tiny Llama-style model (CPU), each figure beside a baseline of the same run.

* training throughput (real tokens/s): LoRA vs full fine-tuning;
* judging throughput (units/s): batched generation vs one prompt at a time;
* expected score (one forward pass per unit) vs sampling 10 answers per unit — the cost of the
  two ways to get a score distribution.

Run: ``.venv/bin/python bench/critic_bench.py`` (prints JSON).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "critic"))  # the tiny offline models and campaign

from campaign_factory import build_annotated_campaigns  # noqa: E402
from tiny_models import build_tiny_llama  # noqa: E402

from critic.judging import plan_jobs  # noqa: E402
from critic.local import GenerationOptions, expected_scores, generate  # noqa: E402
from critic.modeling import load_critic  # noqa: E402
from critic.prompts import builtin_template, score_prefix  # noqa: E402
from critic.sft import SftOptions, export_campaign_sft  # noqa: E402
from critic.train_config import TrainConfig  # noqa: E402
from critic.training import train_critic  # noqa: E402
from data.readmodels.critic_io import campaign_units, image_resolver  # noqa: E402
from data.storage.campaign_lookup import get_campaign  # noqa: E402
from data.storage.engine import make_engine, session_scope, upgrade_database  # noqa: E402
from schemas.core import stored_id  # noqa: E402
from schemas.protocols import ALIGNMMBENCH  # noqa: E402

TRAIN_STEPS = 12
NEW_TOKENS = 24
SAMPLES = 10
PROMPT_REPEATS = 4


def main() -> dict:
    folder = Path(tempfile.mkdtemp(prefix="critic-bench-"))
    os.environ["CRITIQUELAB_DATA_DIR"] = str(folder / "data")
    engine = make_engine(f"sqlite:///{folder / 'bench.db'}")
    upgrade_database(engine)
    build_annotated_campaigns(engine)
    model_dir = build_tiny_llama(folder / "tiny-llama")
    data = folder / "sft.jsonl"
    export_campaign_sft(engine, "amb", data, SftOptions(eval_fraction=0.0))
    figures: dict = {"model": "tiny Llama (hidden 32, 2 layers, vocab 400)", "device": "cpu"}

    # warm-up (thread pools, allocator, lazy imports), not measured
    train_critic(
        TrainConfig(
            data=data,
            base_model=model_dir,
            output_dir=folder / "warm-up",
            max_steps=2,
            batch_size=4,
            save_steps=10_000,
            evaluate=False,
        )
    )
    training: dict[str, dict[str, float]] = {}
    for mode in ("full", "lora"):
        result = train_critic(
            TrainConfig(
                data=data,
                base_model=model_dir,
                output_dir=folder / mode,
                lora=mode == "lora",
                max_steps=TRAIN_STEPS,
                batch_size=4,
                save_steps=10_000,
                evaluate=False,
            )
        )
        training[mode] = {
            "tokens": result.train_tokens,
            "seconds": round(result.seconds, 3),
            "tokens_per_s": round(result.tokens_per_second, 1),
        }
    figures["training"] = {
        **training,
        "lora_vs_full": round(
            training["lora"]["tokens_per_s"] / training["full"]["tokens_per_s"], 2
        ),
    }

    critic = load_critic(model_dir)
    with session_scope(engine) as session:
        units = campaign_units(session, stored_id(get_campaign(session, "amb")))
    template = builtin_template("alignmmbench")
    prompts = [
        job.prompt
        for job in plan_jobs(
            units, ALIGNMMBENCH, template, vision=False, resolve_image=image_resolver(engine)
        )
    ]
    prompts = prompts * PROMPT_REPEATS  # 48 prompts: long enough to time
    generate(critic, prompts[:2], GenerationOptions(max_new_tokens=2))  # warm-up, not measured
    judging: dict[str, dict[str, float]] = {}
    for batch_size in (8, 1):
        started = time.perf_counter()
        generate(
            critic, prompts, GenerationOptions(max_new_tokens=NEW_TOKENS, batch_size=batch_size)
        )
        seconds = time.perf_counter() - started
        judging[f"batch_{batch_size}"] = {
            "units": len(prompts),
            "seconds": round(seconds, 3),
            "units_per_s": round(len(prompts) / seconds, 2),
        }
    figures["judging"] = {
        **judging,
        "batched_vs_single": round(
            judging["batch_8"]["units_per_s"] / judging["batch_1"]["units_per_s"], 2
        ),
        "new_tokens": NEW_TOKENS,
    }

    started = time.perf_counter()
    expected_scores(
        critic,
        prompts,
        answer_prefix=score_prefix(template),
        scale_points=ALIGNMMBENCH.scale_points(),
        batch_size=8,
    )
    expected_seconds = time.perf_counter() - started
    rating_tokens = len(critic.tokenizer('{"Rating": 10,', add_special_tokens=False)["input_ids"])
    started = time.perf_counter()
    generate(
        critic,
        prompts,
        GenerationOptions(
            max_new_tokens=rating_tokens, do_sample=True, num_samples=SAMPLES, batch_size=8
        ),
    )
    sampled_seconds = time.perf_counter() - started
    figures["expected_score"] = {
        "units": len(prompts),
        "expected_pass_seconds": round(expected_seconds, 3),
        f"sample_{SAMPLES}_seconds": round(sampled_seconds, 3),
        "speedup": round(sampled_seconds / expected_seconds, 2),
        "note": f"each sample generates {rating_tokens} tokens, just enough to write the rating; "
        "the expected score is one forward pass over prompt + answer prefix",
    }
    engine.dispose()
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
