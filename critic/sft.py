"""Critic training data (FORMATS.md §4): human judgements as chat conversations.

Each record is the judge prompt (system + user) and, as the assistant turn, the human judgement
in the protocol's output format with the human rationale — the recipe of CritiqueVLM
(AlignMMBench), MMIE-Score and LLaVA-Critic, which all fine-tune on human score + reason pairs.

The label of a unit is its live adjudication if there is one, else the consensus of its
annotators (``mean`` or ``median`` of the scores rounded half up to the scale step, ``majority``
for pairwise with no majority → tie), or — with ``per_annotator`` — one record per annotator with
their own label and rationale. Items, never responses, are split between train and eval with a
seed, so no item is in both. Answers a reviewer rejected are not read
(:func:`data.readmodels.critic_io.annotated_units`), and the labels of annotators held or retired
in the campaign are left out as if listed in ``exclude_annotators`` (the summary names them,
with why).
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Literal, cast, get_args

import numpy as np
from sqlalchemy.engine import Engine

from calibration.reference import ConsensusRule, ReferenceRule, human_reference, reference_choices
from calibration.reference import consensus as human_consensus
from calibration.scale import Scale
from critic.judge_prompt import build_prompt
from critic.prompts import PromptTemplate, builtin_template, format_target
from critic.sft_errors import SftFileError
from data.io.importers.errors import InvalidRecord
from data.io.importers.sources import read_json_lines
from data.readmodels.campaign_input import standing_exclusions
from data.readmodels.critic_io import (
    AnnotatedUnit,
    HumanLabel,
    annotated_units,
    image_resolver,
)
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import read_scope
from schemas.core import stored_id
from schemas.option_text import OptionError, OptionText
from schemas.protocols import PREFERENCES, Protocol, to_shown

_RULES: dict[str, ConsensusRule] = {rule: rule for rule in get_args(ConsensusRule)}

SftFormat = Literal["jsonl", "hf"]
"""``jsonl``: one conversation per line; ``hf``: a Hugging Face ``datasets`` folder
(:mod:`critic.sft_hf`)."""
SFT_FORMATS: dict[str, SftFormat] = {"jsonl": "jsonl", "hf": "hf"}


@dataclass(frozen=True)
class SftOptions:
    """How human labels become training records."""

    eval_fraction: float = 0.1
    """Share of items (not responses) held out for evaluation."""
    seed: int = 0
    """Seed of the item split and of the shown order of pairs."""
    per_annotator: bool = False
    """One record per annotator instead of one per unit with the consensus label."""
    consensus: str | None = None
    """The reference rule (``--reference``): ``mean`` (default for scores), ``median``,
    ``majority`` (default for pairs), ``dawid-skene`` (pairs) or ``mace`` (pairs, and scores on
    a scale with points); checked against the protocol, so a user's word can be passed as it
    is. The two models are fitted once to every annotated unit of the campaign."""
    exclude_annotators: tuple[str, ...] = ()
    """Annotators (login names) whose labels make neither a consensus nor a record."""
    vision: bool = False
    """Vision-language prompts (images as segments) instead of text-only ones."""
    show_reference: bool = True


@dataclass(frozen=True)
class SftRecord:
    """One training conversation."""

    messages: list[dict[str, Any]]
    images: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def split(self) -> str:
        return str(self.meta.get("split", "train"))

    def to_json(self) -> str:
        payload = {"messages": self.messages, "images": self.images, "meta": self.meta}
        return json.dumps(payload, ensure_ascii=False)


@dataclass(frozen=True)
class SftExportSummary:
    """What ``export sft`` wrote."""

    path: Path | None
    """The file written; None when the records went to a stream."""
    records: int
    train: int
    eval: int
    units: int
    """Units with at least one live human label."""
    items: int
    prompt_id: str
    excluded_annotators: dict[str, str] = field(default_factory=dict)
    """Annotators whose labels were left out → why: ``listed`` (``exclude_annotators``),
    ``held`` or ``retired`` (their standing in the campaign, left out by itself)."""


def export_campaign_sft(
    engine: Engine,
    campaign: str,
    target: Path | IO[str] | IO[bytes],
    options: SftOptions,
    *,
    language: str = "en",
    template: PromptTemplate | None = None,
    sft_format: SftFormat = "jsonl",
) -> SftExportSummary:
    """Write the training file of ``campaign``'s human judgements (FORMATS.md §4) to ``target``:
    a path, or an open text or binary stream (UTF-8), e.g. a page's download buffer; with
    ``sft_format="hf"`` a ``datasets`` folder at the path ``target``."""
    with read_scope(engine) as session:
        found = get_campaign(session, campaign)
        protocol, show_reference = campaign_protocol(found), found.show_reference
        units = annotated_units(session, stored_id(found))
        standing = standing_exclusions(session, stored_id(found))
    listed = options.exclude_annotators
    excluded = {name: "listed" for name in listed} | standing
    options = replace(options, exclude_annotators=tuple(excluded))
    if not units:
        raise ValueError(
            f"campaign {campaign!r} has no human annotations yet: annotate some units first"
        )
    present = {label.annotator for unit in units for label in unit.labels}
    unknown = [name for name in listed if name not in present]
    if unknown:  # a typo would leave out nobody, silently
        raise ValueError(
            f"annotator(s) {', '.join(unknown)} have no labels in campaign {campaign!r}; "
            f"present: {', '.join(sorted(present))}"
        )
    template = template or builtin_template(protocol.name, language)
    options = replace(options, show_reference=options.show_reference and show_reference)
    records = build_sft_records(units, protocol, template, options, image_resolver(engine))
    written = write_sft(records, target, sft_format)
    return SftExportSummary(
        path=Path(target) if isinstance(target, str | Path) else None,
        records=written.records,
        train=written.train,
        eval=written.eval,
        units=len(units),
        items=len({unit.unit.item.item_id for unit in units}),
        prompt_id=template.prompt_id(vision=options.vision),
        excluded_annotators=excluded,
    )


def build_sft_records(
    units: list[AnnotatedUnit],
    protocol: Protocol,
    template: PromptTemplate,
    options: SftOptions,
    resolve_image: Callable[[str], Path],
) -> Iterator[SftRecord]:
    """Training records for annotated units (see the module docstring), one at a time: a large
    campaign's records, each with its whole prompt, are written as they are made, not held.
    The options are checked here, before the first record."""
    if not 0 <= options.eval_fraction < 1:
        raise OptionError(
            OptionText(
                "{eval_fraction} is {value}; give a number in [0, 1)", value=options.eval_fraction
            )
        )
    named = options.consensus or ("mean" if protocol.is_pointwise else "majority")
    allowed = reference_choices(protocol)
    if named not in allowed or (protocol.is_pointwise and named == "majority"):
        choices = ", ".join(
            rule for rule in allowed if protocol.is_pointwise <= (rule != "majority")
        )
        raise OptionError(
            OptionText(
                "{consensus} {named} does not apply to {protocol_name}: use {choices}",
                named=repr(named),
                protocol_name=protocol.name,
                choices=choices,
            )
        )
    if options.exclude_annotators:
        units = _without(units, set(options.exclude_annotators))
    consensus = _RULES.get(named)
    fitted = None if consensus is not None else _model_reference(units, protocol, named)
    eval_items = split_items(sorted({u.unit.item.item_id for u in units}), options)
    return _records(
        units, protocol, template, options, resolve_image, consensus or "mean", eval_items, fitted
    )


def _without(units: list[AnnotatedUnit], excluded: set[str]) -> list[AnnotatedUnit]:
    """The units with the excluded annotators' labels removed (units left unlabelled kept:
    an adjudication still labels them)."""
    return [
        replace(unit, labels=tuple(lab for lab in unit.labels if lab.annotator not in excluded))
        for unit in units
    ]


def _model_reference(
    units: list[AnnotatedUnit], protocol: Protocol, rule: str
) -> dict[int, float | str]:
    """Per unit (its position in ``units``), the reference of a latent-class model fitted to
    every unit's labels at once (:func:`calibration.reference.human_reference`); scores on the
    scale's points, as the per-unit rules give them."""
    names = sorted({label.annotator for unit in units for label in unit.labels})
    row = {name: i for i, name in enumerate(names)}
    matrix = np.full((len(names), len(units)), np.nan)
    for column, unit in enumerate(units):
        for label in unit.labels:
            value = _label_value(label, protocol)
            if value is not None:
                code = float(value) if protocol.is_pointwise else PREFERENCES.index(str(value))
                matrix[row[label.annotator], column] = code
    scale = Scale.of(protocol) if protocol.is_pointwise else None
    reference = human_reference(
        matrix, cast(ReferenceRule, rule), pairwise=scale is None, scale=scale
    ).values
    result: dict[int, float | str] = {}
    for column, value in enumerate(reference):
        if np.isnan(value):
            continue
        if scale is None:
            result[column] = PREFERENCES[int(value)]
        else:
            result[column] = float(scale.round(np.array([value]))[0])
    return result


def _records(
    units: list[AnnotatedUnit],
    protocol: Protocol,
    template: PromptTemplate,
    options: SftOptions,
    resolve_image: Callable[[str], Path],
    consensus: ConsensusRule,
    eval_items: set[str],
    fitted: dict[int, float | str] | None = None,
) -> Iterator[SftRecord]:
    for position, annotated in enumerate(units):
        # The shown order drawn for a unit depends on the seed and the unit alone, not on where
        # it falls in the list: a campaign imported from another tool lists its units in another
        # order and must give the same file.
        rng = random.Random(f"{options.seed}/{annotated.unit.unit_key}")
        split = "eval" if annotated.unit.item.item_id in eval_items else "train"
        labels = {label.annotator: _label_value(label, protocol) for label in annotated.labels}
        if options.per_annotator:
            targets = [
                (value, label.rationale, [label.annotator], "annotator", _swapped(label, rng))
                for label in annotated.labels
                if (value := labels[label.annotator]) is not None
            ]
        else:
            model = None if fitted is None else fitted.get(position)
            target = _consensus_target(annotated, protocol, consensus, labels, model)
            targets = [(*target, rng.random() < 0.5)] if target else []
        for value, rationale, annotators, source, swapped in targets:
            yield _record(
                annotated,
                protocol,
                template,
                options,
                resolve_image,
                value,
                rationale,
                meta={
                    "annotators": annotators,
                    "split": split,
                    "label": value,
                    "label_source": source,
                    "labels": labels,
                },
                swapped=swapped,
            )


def split_items(item_ids: list[str], options: SftOptions) -> set[str]:
    """The items held out for evaluation: a seeded shuffle of the sorted ids, the first
    ``round(n × eval_fraction)`` (at least one when the fraction is positive and n ≥ 2)."""
    if options.eval_fraction == 0 or not item_ids:
        return set()
    shuffled = sorted(item_ids)
    random.Random(options.seed).shuffle(shuffled)
    count = round(len(shuffled) * options.eval_fraction)
    count = min(max(count, 1 if len(shuffled) >= 2 else 0), len(shuffled) - 1)
    return set(shuffled[:count])


@dataclass
class SftCounts:
    """Records written, and how many of them are in each split."""

    records: int = 0
    train: int = 0
    eval: int = 0

    def count(self, record: SftRecord) -> SftRecord:
        self.records += 1
        if record.split == "eval":
            self.eval += 1
        else:
            self.train += 1
        return record


def write_sft(
    records: Iterable[SftRecord],
    target: Path | IO[str] | IO[bytes],
    sft_format: SftFormat = "jsonl",
) -> SftCounts:
    """Write records as JSON Lines to a path (written to a temporary file, then moved into
    place; nothing is left behind if making a record fails) or to an open stream (text, or
    binary as UTF-8); ``hf``: as a ``datasets`` folder at the path (:mod:`critic.sft_hf`)."""
    if sft_format not in SFT_FORMATS:
        raise ValueError(f"unknown SFT format {sft_format!r}: use {' or '.join(SFT_FORMATS)}")
    if sft_format == "hf":
        if not isinstance(target, str | Path):
            raise ValueError("a datasets folder is written to a path, not to a stream")
        from critic.sft_hf import write_sft_dataset

        counted = SftCounts()
        rows = (
            (record.split, record.messages, record.images, record.meta)
            for record in map(counted.count, records)
        )
        write_sft_dataset(rows, Path(target))
        return counted
    counts = SftCounts()
    lines = (counts.count(record).to_json() + "\n" for record in records)
    if not isinstance(target, str | Path):
        if isinstance(target, io.TextIOBase):
            target.writelines(lines)
        else:
            cast(IO[bytes], target).writelines(line.encode("utf-8") for line in lines)
        return counts
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    try:
        with partial.open("w", encoding="utf-8") as handle:
            handle.writelines(lines)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return counts


def read_sft(path: Path) -> list[SftRecord]:
    """Read a training file, or a ``datasets`` folder (``export sft --format hf``), as records;
    :class:`SftFileError` names the line (the split and row) and field of a bad record.

    Relative image paths are resolved against the file's folder.
    """
    path = Path(path)
    if path.is_dir():
        from critic.sft_hf import is_sft_dataset, read_sft_dataset

        if not is_sft_dataset(path):
            raise SftFileError(
                f"{path} is a folder but not a datasets folder (no dataset_dict.json or "
                "dataset_info.json): give a JSONL file or a datasets folder the SFT export wrote"
            )
        rows = read_sft_dataset(path)
    else:
        rows = [(f"{path}:{number}", raw) for number, raw in _json_lines(path)]
    records = [_checked(where, raw, path.parent) for where, raw in rows]
    if not records:
        raise SftFileError(f"{path}: no records; export some with critiquelab export sft")
    return records


def _checked(where: str, raw: Any, folder: Path) -> SftRecord:
    """One record read from a file or a dataset, checked; its image paths made absolute."""
    messages = raw.get("messages") if isinstance(raw, dict) else None
    if not isinstance(messages, list) or len(messages) < 2:
        raise SftFileError(f"{where}: `messages` must be a list of at least two turns")
    if not isinstance(messages[-1], dict) or messages[-1].get("role") != "assistant":
        raise SftFileError(f"{where}: the last message must be the assistant's answer")
    if any(not isinstance(m, dict) or "role" not in m or "content" not in m for m in messages):
        raise SftFileError(f"{where}: every message needs `role` and `content`")
    images = raw.get("images") or []
    if not isinstance(images, list):
        raise SftFileError(f"{where}: `images` must be a list of file paths")
    images = [str((folder / image).resolve()) for image in images]
    return SftRecord(messages, images, dict(raw.get("meta") or {}))


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """The file's lines by the one reader of JSON Lines (a regular file, bounded lines, strict
    JSON), its first problem raised as :class:`SftFileError`."""
    try:
        yield from read_json_lines(path)
    except InvalidRecord as error:
        raise SftFileError(str(error)) from None


def _record(
    annotated: AnnotatedUnit,
    protocol: Protocol,
    template: PromptTemplate,
    options: SftOptions,
    resolve_image: Callable[[str], Path],
    value: float | str,
    rationale: str,
    *,
    meta: dict[str, Any],
    swapped: bool,
) -> SftRecord:
    unit = annotated.unit
    shown = unit.responses[::-1] if swapped and not protocol.is_pointwise else unit.responses
    prompt = build_prompt(
        template,
        protocol,
        unit.item,
        shown,
        vision=options.vision,
        resolve_image=resolve_image,
        show_reference=options.show_reference,
    )
    shown_value = value if protocol.is_pointwise else to_shown(str(value), swapped=swapped)
    answer = {
        "role": "assistant",
        "content": format_target(template, protocol, shown_value, rationale),
    }
    unit_meta: dict[str, Any] = {
        "protocol": protocol.name,
        "item_id": unit.item.item_id,
        "task": unit.item.task,
        "category": unit.item.category,
        "unit_key": unit.unit_key,
        "prompt_id": prompt.prompt_id,
    }
    if protocol.is_pointwise:
        unit_meta["response_id"] = unit.responses[0].response_id
        unit_meta["model"] = unit.responses[0].model
        unit_meta["scale"] = [protocol.scale_min, protocol.scale_max, protocol.step]
    else:
        unit_meta["pair"] = [response.response_id for response in unit.responses]
        unit_meta["shown"] = [response.response_id for response in shown]
        if prompt.answer_spans:  # where a head critic reads each response (critic.head)
            unit_meta["answer_spans"] = [list(span) for span in prompt.answer_spans]
    return SftRecord([*prompt.messages, answer], prompt.images, {**unit_meta, **meta})


def _label_value(label: HumanLabel, protocol: Protocol) -> float | str | None:
    return label.score if protocol.is_pointwise else label.preference


def _swapped(label: HumanLabel, rng: random.Random) -> bool:
    if label.shown_order is None:
        return rng.random() < 0.5
    return label.shown_order == "BA"


def _consensus_target(
    annotated: AnnotatedUnit,
    protocol: Protocol,
    consensus: ConsensusRule,
    labels: dict[str, float | str | None],
    model: float | str | None = None,
) -> tuple[float | str, str, list[str], str] | None:
    """``(value, rationale, annotators, source)``; the rationale is that of the annotator whose
    label is closest to the value (first by name on ties). None when there is no label."""
    given = {name: value for name, value in labels.items() if value is not None}
    if not given:
        return None
    if annotated.adjudicated is not None:
        value, source = annotated.adjudicated, "adjudicated"
    elif model is not None:  # a latent-class model's reference, fitted to the whole campaign
        value, source = model, "consensus"
    else:  # the reference calibration grades the critic against (calibration.reference)
        value, source = _consensus_value(list(given.values()), protocol, consensus), "consensus"
    closest = min(sorted(given), key=lambda name: _distance(given[name], value))
    rationale = next(lab.rationale for lab in annotated.labels if lab.annotator == closest)
    return value, rationale, sorted(given), source


def _distance(a: float | str, b: float | str) -> float:
    if isinstance(a, str) or isinstance(b, str):
        return 0.0 if a == b else 1.0
    return abs(float(a) - float(b))


def _consensus_value(
    values: list[float | str], protocol: Protocol, rule: ConsensusRule
) -> float | str:
    """The humans' consensus on one unit, exactly as calibration computes the reference: mean or
    median rounded half up to the scale, or the preference of more than half (else tie)."""
    if protocol.is_pointwise:
        centre = human_consensus(np.array([[float(v)] for v in values]), rule)
        scale = Scale.of(protocol)
        return float(scale.round(centre)[0]) if scale.is_discrete else float(centre[0])
    codes = np.array([[float(PREFERENCES.index(str(v)))] for v in values])
    return PREFERENCES[int(human_consensus(codes, "majority", pairwise=True)[0])]
