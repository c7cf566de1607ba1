"""Run a critic in this process: batched generation and expected scores.

Prompts are batched with left padding (position ids follow the attention mask, so a padded prompt
is read exactly as it would be alone) and answered greedily unless sampling is asked for.

The expected score (METRICS.md, calibration maps) is Σ p(s)·s over the scale points s, read from
the model's next-token distribution right after the answer prefix of the template
(``{"Rating": `` …). Scale values that take several tokens (``10`` = ``1`` ``0``) are handled with
a trie: every distribution needed comes from the same batched forward pass, the probability of a
value is the product along its tokens times the probability that no longer value continues it,
and the probabilities are renormalised over the scale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from critic.collate import CriticCollator, EncodedConversation, render_prompt
from critic.judge_prompt import JudgePrompt
from critic.modeling import LoadedModel
from critic.prompts import format_value
from schemas.option_text import OptionError, OptionText


@dataclass(frozen=True)
class GenerationOptions:
    """How the critic writes its answers."""

    max_new_tokens: int = 256
    do_sample: bool = False
    """Greedy by default; sampling draws ``num_samples`` answers per prompt."""
    temperature: float = 1.0
    num_samples: int = 1
    batch_size: int = 8


def encode_prompt(
    loaded: LoadedModel, prompt: JudgePrompt, suffix: str = ""
) -> EncodedConversation:
    """Token ids of the judge prompt plus the generation prompt (and ``suffix``, if any)."""
    text = render_prompt(loaded.chat, prompt.messages) + suffix
    if loaded.processor is None:
        ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        return EncodedConversation(ids, ids)
    from PIL import Image

    pictures = [Image.open(path).convert("RGB") for path in prompt.images]
    encoded = loaded.processor(text=text, images=pictures or None, return_tensors="pt")
    ids = encoded["input_ids"][0].tolist()
    extra = {k: v for k, v in encoded.items() if k not in ("input_ids", "attention_mask")}
    return EncodedConversation(ids, ids, extra)


@dataclass(frozen=True)
class Generation:
    """A prompt's answers and what they took."""

    texts: list[str]
    prompt_tokens: int
    """Tokens of the prompt (padding not counted)."""
    completion_tokens: int
    """Tokens generated over all its answers, up to and including the end-of-sequence token."""
    latency: float
    """Wall-clock seconds of its batch (encoding, generation, decoding) divided by the number of
    prompts in the batch: batched generation has no per-prompt time."""


def generate(
    loaded: LoadedModel, prompts: list[JudgePrompt], options: GenerationOptions
) -> list[list[str]]:
    """The critic's answers: ``num_samples`` texts per prompt, in the order of ``prompts``."""
    return [generation.texts for generation in generate_measured(loaded, prompts, options)]


def generate_measured(
    loaded: LoadedModel, prompts: list[JudgePrompt], options: GenerationOptions
) -> list[Generation]:
    """:func:`generate` with each prompt's token counts and share of its batch's wall time."""
    collator = CriticCollator(loaded.tokenizer.pad_token_id, padding_side="left")
    answers: list[Generation] = []
    model = loaded.model.eval()
    stops = _eos_ids(loaded)
    for start in range(0, len(prompts), options.batch_size):
        started = time.perf_counter()
        batch = collator(
            [encode_prompt(loaded, p) for p in prompts[start : start + options.batch_size]]
        )
        batch.pop("labels")
        batch = {key: value.to(model.device) for key, value in batch.items()}
        sampling: dict[str, Any] = (
            {"do_sample": True, "temperature": options.temperature}
            if options.do_sample
            else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        )
        with torch.no_grad():
            output = model.generate(
                **batch,
                max_new_tokens=options.max_new_tokens,
                num_return_sequences=options.num_samples,
                pad_token_id=loaded.tokenizer.pad_token_id,
                **sampling,
            )
        new_tokens = output[:, batch["input_ids"].shape[1] :]
        texts = loaded.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        lengths = [_generated_length(row.tolist(), stops) for row in new_tokens]
        prompt_lengths = batch["attention_mask"].sum(-1).tolist()
        share = (time.perf_counter() - started) / len(prompt_lengths)
        for number, index in enumerate(range(0, len(texts), options.num_samples)):
            answers.append(
                Generation(
                    texts=[text.strip() for text in texts[index : index + options.num_samples]],
                    prompt_tokens=int(prompt_lengths[number]),
                    completion_tokens=sum(lengths[index : index + options.num_samples]),
                    latency=share,
                )
            )
    return answers


def _eos_ids(loaded: LoadedModel) -> set[int]:
    """The token ids that end generation (the generation config's, else the tokenizer's)."""
    config = getattr(loaded.model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        eos = loaded.tokenizer.eos_token_id
    if eos is None:
        return set()
    return {int(eos)} if isinstance(eos, int) else {int(token) for token in eos}


def _generated_length(tokens: list[int], stops: set[int]) -> int:
    """Tokens up to and including the first end-of-sequence token (the rest is padding)."""
    for position, token in enumerate(tokens):
        if token in stops:
            return position + 1
    return len(tokens)


def expected_scores(
    loaded: LoadedModel,
    prompts: list[JudgePrompt],
    *,
    answer_prefix: str,
    scale_points: list[float],
    batch_size: int = 8,
) -> list[float]:
    """Σ p(s)·s for each prompt (see the module docstring), one batched forward pass per batch."""
    candidates = _candidate_tokens(loaded, answer_prefix, scale_points)
    runs = _maximal_internal_paths(list(candidates.values()))
    collator = CriticCollator(loaded.tokenizer.pad_token_id, padding_side="left")
    model = loaded.model.eval()
    results = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        features, anchors = [], []
        for prompt in chunk:
            base = encode_prompt(loaded, prompt, answer_prefix)
            for run in runs:
                ids = base.input_ids + list(run)
                features.append(EncodedConversation(ids, ids, base.image_inputs))
                anchors.append(len(base.input_ids))
        batch = collator(features)
        batch.pop("labels")
        mask = batch["attention_mask"]
        batch["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        batch = {key: value.to(model.device) for key, value in batch.items()}
        # left padding ends every row at the last column, so the positions read (the answer
        # prefix's last token and each run's tokens) are the last longest-run + 1 columns
        kept = max(len(run) for run in runs) + 1
        with torch.no_grad():
            logits = model(**batch, logits_to_keep=kept).logits
            log_probs = logits.float().log_softmax(-1).cpu()
        first_kept = mask.shape[1] - kept
        for index in range(len(chunk)):
            node_probs: dict[tuple[int, ...], torch.Tensor] = {}
            for r, run in enumerate(runs):
                row = index * len(runs) + r
                position = mask.shape[1] - len(features[row].input_ids) + anchors[row] - 1
                offset = position - first_kept
                for depth in range(len(run) + 1):
                    node_probs.setdefault(run[:depth], log_probs[row, offset + depth].exp())
            results.append(_expectation(candidates, node_probs))
    return results


def _candidate_tokens(
    loaded: LoadedModel, answer_prefix: str, scale_points: list[float]
) -> dict[float, tuple[int, ...]]:
    """Token ids of each scale value as written after the answer prefix."""
    tokenizer = loaded.tokenizer
    anchor = "\n" + answer_prefix
    base = tokenizer(anchor, add_special_tokens=False)["input_ids"]
    result = {}
    for point in scale_points:
        ids = tokenizer(anchor + format_value(point), add_special_tokens=False)["input_ids"]
        if ids[: len(base)] != base or len(ids) == len(base):
            raise OptionError(
                OptionText(
                    "the tokenizer merges the score {score} with the answer prefix {prefix!r}, "
                    "so score-token probabilities cannot be read; score without {expected_score}",
                    score=format_value(point),
                    prefix=answer_prefix,
                )
            )
        result[point] = tuple(ids[len(base) :])
    return result


def _maximal_internal_paths(sequences: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Fewest token paths whose forward passes expose every distribution needed: the trie nodes
    that have children (proper prefixes of a value), keeping those not inside a longer one."""
    internal = {seq[:depth] for seq in sequences for depth in range(len(seq))}
    return sorted(
        node for node in internal if not any(o[: len(node)] == node and o != node for o in internal)
    )


def _expectation(
    candidates: dict[float, tuple[int, ...]], node_probs: dict[tuple[int, ...], torch.Tensor]
) -> float:
    weights = {}
    for point, tokens in candidates.items():
        probability = 1.0
        for depth, token in enumerate(tokens):
            probability *= float(node_probs[tokens[:depth]][token])
        children = {
            other[len(tokens)]
            for other in candidates.values()
            if len(other) > len(tokens) and other[: len(tokens)] == tokens
        }
        if children:
            probability *= 1.0 - sum(float(node_probs[tokens][child]) for child in children)
        weights[point] = max(probability, 0.0)
    total = sum(weights.values())
    if total <= 0:
        return float("nan")
    return sum(point * weight for point, weight in weights.items()) / total


def verdict_probabilities(
    loaded: LoadedModel,
    prompts: list[JudgePrompt],
    *,
    answer_prefix: str,
    verdicts: dict[str, str],
    batch_size: int = 8,
) -> list[dict[str, float]]:
    """p(verdict) for each prompt from one forward pass over the prompt plus ``answer_prefix``.

    ``verdicts`` maps a label to the text the judge writes for it (pairwise: ``A`` → ``A``,
    ``tie`` → ``C`` after ``[[``); each must be one token after the prefix. The probabilities are
    those of the next token, renormalised over the verdicts; ``_mass`` is their total before
    renormalising (how much of the model's next-token probability went to a verdict at all).
    """
    tokens = _single_tokens(loaded, answer_prefix, verdicts)
    collator = CriticCollator(loaded.tokenizer.pad_token_id, padding_side="left")
    model = loaded.model.eval()
    results = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        batch = collator([encode_prompt(loaded, prompt, answer_prefix) for prompt in chunk])
        batch.pop("labels")
        batch["position_ids"] = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        batch = {key: value.to(model.device) for key, value in batch.items()}
        with torch.no_grad():
            last = model(**batch, logits_to_keep=1).logits[:, -1].float().softmax(-1).cpu()
        for row in last:
            picked = {label: float(row[token]) for label, token in tokens.items()}
            mass = sum(picked.values())
            probs = {label: value / mass for label, value in picked.items()} if mass > 0 else {}
            results.append({**probs, "_mass": mass})
    return results


def _single_tokens(
    loaded: LoadedModel, answer_prefix: str, verdicts: dict[str, str]
) -> dict[str, int]:
    tokenizer = loaded.tokenizer
    anchor = "\n" + answer_prefix
    base = tokenizer(anchor, add_special_tokens=False)["input_ids"]
    tokens = {}
    for label, text in verdicts.items():
        ids = tokenizer(anchor + text, add_special_tokens=False)["input_ids"]
        if ids[: len(base)] != base or len(ids) != len(base) + 1:
            raise ValueError(
                f"the verdict {text!r} is not one token after {answer_prefix!r} for this "
                "tokenizer, so verdict probabilities cannot be read from one forward pass"
            )
        tokens[label] = ids[-1]
    return tokens
