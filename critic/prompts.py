"""Judge prompt templates: one general part plus task guidance, per protocol and language.

A template is a TOML file (built-ins in ``critic/templates/``; users pass their own with
``--template FILE``). It holds only our wording — the role, the output format, the section
headers. The facts it talks about come from :mod:`schemas.protocols` (the scale and its bands)
and :mod:`schemas.guidance` (the criteria per MMIE category, the AlignMMBench task guidance). A
template file may give ``criteria`` / ``criteria_by_category`` of its own (the Chinese ones do,
because the protocols carry English criteria only). :mod:`critic.judge_prompt` renders a judge
input from a template.

Every rendered prompt names its template as ``<id>-<vl|text>@<version>`` (the vision-language and
the text-only variant differ in what the judge is told about images); that string is stored as
``Judgement.prompt_id`` with every judgement.

The target of a training example and the answer prefix used for expected scores both come from
the template's ``target``, so the critic is trained on exactly the format the parser reads.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from data.io.importers.errors import InvalidRecord
from data.io.importers.sources import read_text
from schemas.option_text import OptionError, OptionText
from schemas.protocols import Protocol

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
LANGUAGES: tuple[str, ...] = ("en", "zh")
_REQUIRED_KEYS = (
    "id",
    "version",
    "protocol",
    "language",
    "system",
    "sees_images",
    "no_images",
    "instructions",
    "output",
    "target",
    "headers",
)
_HEADER_KEYS = (
    "history",
    "question",
    "reference",
    "answer",
    "answer_a",
    "answer_b",
    "user",
    "assistant",
    "image",
)
SHOWN_VERDICTS: dict[str, str] = {"A": "A", "B": "B", "tie": "C"}
"""Label (in the shown order) → what the pairwise judge writes for it."""


class TemplateError(OptionError):
    """A template file that cannot be used, with the field to fix."""


@dataclass(frozen=True)
class PromptTemplate:
    """A judge prompt template (see the module docstring for the file format)."""

    id: str
    version: int
    protocol: str
    """Protocol name the template is written for (``score`` templates serve any scale)."""
    language: str
    system: str
    sees_images: str
    no_images: str
    instructions: str
    """General part: ``{scale}``, ``{bands}``, ``{criteria}`` are filled from the protocol."""
    guidance: str
    """Task part: ``{task}`` and ``{guidance}``; left out when the task has no guidance."""
    output: str
    target: str
    """Assistant answer: ``{value}`` / ``{verdict}``, ``{reason}``, ``{reason_json}``."""
    headers: dict[str, str]
    criteria: tuple[str, ...] = ()
    criteria_by_category: dict[str, tuple[str, ...]] = field(default_factory=dict)
    scale_words: dict[str, str] = field(default_factory=dict)

    def prompt_id(self, *, vision: bool) -> str:
        """``<id>-vl@<version>`` or ``<id>-text@<version>``."""
        return f"{self.id}-{'vl' if vision else 'text'}@{self.version}"


def load_template(path: Path | str) -> PromptTemplate:
    """Read a template file; :class:`TemplateError` names the missing or bad field."""
    path = Path(path)
    try:
        raw = tomllib.loads(read_text(path))  # the one reader: a regular file, bounded size
    except InvalidRecord as error:
        raise TemplateError(f"template file {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise TemplateError(f"{path}: not valid TOML ({error})") from None
    missing = [key for key in _REQUIRED_KEYS if key not in raw]
    if missing:
        raise TemplateError(
            f"{path}: missing field(s) {', '.join(missing)}; copy a built-in template from "
            f"{TEMPLATES_DIR} and edit it"
        )
    missing_headers = [key for key in _HEADER_KEYS if key not in raw["headers"]]
    if missing_headers:
        raise TemplateError(f"{path}: [headers] lacks {', '.join(missing_headers)}")
    if not isinstance(raw["version"], int):
        raise TemplateError(f"{path}: `version` must be an integer, got {raw['version']!r}")
    placeholder = "{verdict}" if raw["protocol"] == "pairwise" else "{value}"
    if placeholder not in raw["target"]:
        raise TemplateError(f"{path}: `target` must contain {placeholder}")
    return PromptTemplate(
        id=str(raw["id"]),
        version=raw["version"],
        protocol=str(raw["protocol"]),
        language=str(raw["language"]),
        system=raw["system"],
        sees_images=raw["sees_images"],
        no_images=raw["no_images"],
        instructions=raw["instructions"],
        guidance=raw.get("guidance", ""),
        output=raw["output"],
        target=raw["target"],
        headers=dict(raw["headers"]),
        criteria=tuple(raw.get("criteria", ())),
        criteria_by_category={
            key: tuple(value) for key, value in raw.get("criteria_by_category", {}).items()
        },
        scale_words=dict(raw.get("scale_words", {})),
    )


def builtin_template(protocol: str, language: str = "en") -> PromptTemplate:
    """The bundled template of ``protocol`` (alignmmbench, mmie, pairwise, score), ``language``."""
    if language not in LANGUAGES:
        raise TemplateError(
            OptionText(
                "{language} {value} is not one of: {choices}",
                value=repr(language),
                choices=", ".join(LANGUAGES),
            )
        )
    path = TEMPLATES_DIR / f"{protocol}-{language}.toml"
    if not path.exists():
        raise TemplateError(f"no built-in template for protocol {protocol!r}")
    return load_template(path)


def format_target(
    template: PromptTemplate, protocol: Protocol, value: float | str, rationale: str
) -> str:
    """The assistant answer for a judgement: ``value`` (score, or A/B/tie in the shown order)."""
    reason = rationale.strip()
    if protocol.is_pointwise:
        return template.target.format(
            value=format_value(float(value)), reason=reason, reason_json=_json_string(reason)
        )
    verdict = SHOWN_VERDICTS[str(value)]
    return template.target.format(verdict=verdict, reason=reason, reason_json=_json_string(reason))


def score_prefix(template: PromptTemplate) -> str:
    """The answer text before the score (``{"Rating": `` / ``### Score\\n``): where expected
    scores read the score-token probabilities."""
    before = template.target.split("{value}", 1)[0]
    return before.replace("{{", "{").replace("}}", "}")


def verdict_prefix(template: PromptTemplate) -> str:
    """The pairwise answer text before the verdict (``[[``), where its probabilities are read."""
    before = template.target.split("{verdict}", 1)[0]
    return before.replace("{{", "{").replace("}}", "}")


def format_value(value: float) -> str:
    """A scale value as the judge writes it: ``8``, ``0.3``."""
    return str(int(value)) if float(value).is_integer() else f"{value:.12g}"


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
