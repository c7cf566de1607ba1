"""Judge prompts: built from the protocols' facts, ids with versions, variants, user templates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image

from critic.judge_prompt import build_prompt
from critic.prompts import (
    TEMPLATES_DIR,
    TemplateError,
    builtin_template,
    load_template,
    score_prefix,
)
from schemas.guidance import (
    ALIGNMMBENCH_TASK_GUIDANCE,
    ALIGNMMBENCH_TASK_GUIDANCE_ZH,
    MMIE_CRITERIA,
)
from schemas.items import ItemContent, ResponseContent
from schemas.protocols import ALIGNMMBENCH, MMIE, PAIRWISE, get_protocol, score_protocol


def _item(
    task: str | None = "Counting", category: str | None = None, question=None, reference="Three."
) -> ItemContent:  # type: ignore[no-untyped-def]
    return ItemContent(
        item_id="i1",
        benchmark="alignmmbench",
        task=task,
        category=category,
        group=None,
        history=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        question=question or "How many apples?",
        reference=reference,
    )


def _response(content="I see three apples.", rid: str = "i1/m") -> ResponseContent:  # type: ignore[no-untyped-def]
    return ResponseContent(rid, "m", content, 1)


def _no_images(path: str) -> Path:
    raise AssertionError(f"text-only prompts must not open images ({path})")


def _text(prompt) -> str:  # type: ignore[no-untyped-def]
    content = prompt.messages[1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


@pytest.mark.parametrize("path", sorted(TEMPLATES_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_every_builtin_template_renders_with_its_id_and_version(path: Path) -> None:
    template = load_template(path)
    protocol = get_protocol(template.protocol, scale_min=1, scale_max=5, step=1)
    responses = [_response()] if protocol.is_pointwise else [_response(), _response("Two.", "i1/n")]
    prompt = build_prompt(
        template, protocol, _item(), responses, vision=False, resolve_image=_no_images
    )
    assert prompt.prompt_id == f"{template.id}-text@{template.version}" == f"{path.stem}-text@1"
    assert prompt.messages[0] == {"role": "system", "content": template.system}
    text = _text(prompt)
    assert "How many apples?" in text and "I see three apples." in text and "Hello" in text
    assert "{" not in template.instructions.format(scale="", bands="", criteria="")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_scale_bands_and_task_guidance_come_from_the_protocol(language: str) -> None:
    prompt = build_prompt(
        builtin_template("alignmmbench", language),
        ALIGNMMBENCH,
        _item(),
        [_response()],
        vision=False,
        resolve_image=_no_images,
    )
    text = _text(prompt)
    for band in ALIGNMMBENCH.bands:
        assert (band.description_zh if language == "zh" else band.description) in text
    guidance = ALIGNMMBENCH_TASK_GUIDANCE_ZH if language == "zh" else ALIGNMMBENCH_TASK_GUIDANCE
    assert guidance["Counting"] in text and guidance["Writing"] not in text
    assert "1–10" in text


def test_score_protocol_states_its_own_scale() -> None:
    protocol = score_protocol(0, 1, 0.1)
    prompt = build_prompt(
        builtin_template("score"),
        protocol,
        _item(task=None),
        [_response()],
        vision=False,
        resolve_image=_no_images,
    )
    assert "0–1 in steps of 0.1" in _text(prompt)
    zh = build_prompt(
        builtin_template("score", "zh"),
        protocol,
        _item(task=None),
        [_response()],
        vision=False,
        resolve_image=_no_images,
    )
    assert "0–1 分（步长 0.1）" in _text(zh)


def test_vision_variant_carries_images_in_order_and_text_variant_marks_them(tmp_path: Path) -> None:
    for name, colour in (("a.png", (255, 0, 0)), ("b.png", (0, 0, 255))):
        Image.new("RGB", (8, 8), colour).save(tmp_path / name)
    question = [{"type": "image", "image": "a.png"}, {"type": "text", "text": "Which colours?"}]
    answer = [{"type": "text", "text": "Red, then"}, {"type": "image", "image": "b.png"}]
    template = builtin_template("alignmmbench")
    vision = build_prompt(
        template,
        ALIGNMMBENCH,
        _item(question=question),
        [_response(answer)],
        vision=True,
        resolve_image=lambda p: tmp_path / p,
    )
    assert vision.prompt_id == "alignmmbench-en-vl@1"
    segments = vision.messages[1]["content"]
    assert [s["type"] for s in segments].count("image") == 2
    assert vision.images == [str(tmp_path / "a.png"), str(tmp_path / "b.png")]
    assert template.sees_images in _text(vision)
    text = build_prompt(
        template,
        ALIGNMMBENCH,
        _item(question=question),
        [_response(answer)],
        vision=False,
        resolve_image=_no_images,
    )
    assert "[image 1]" in _text(text) and "[image 2]" in _text(text) and text.images == []
    # the input hash follows the image bytes, so a changed image is a new cache key
    before = vision.input_sha256
    Image.new("RGB", (8, 8), (0, 255, 0)).save(tmp_path / "b.png")
    again = build_prompt(
        template,
        ALIGNMMBENCH,
        _item(question=question),
        [_response(answer)],
        vision=True,
        resolve_image=lambda p: tmp_path / p,
    )
    assert again.input_sha256 != before


def test_mmie_criteria_reference_and_the_released_judges_image_limits(tmp_path: Path) -> None:
    Image.new("RGB", (8, 8)).save(tmp_path / "x.png")
    template = builtin_template("mmie")

    def render(category: str, images: int):  # type: ignore[no-untyped-def]
        answer = []
        for index in range(images):
            answer += [
                {"type": "text", "text": f"step {index}"},
                {"type": "image", "image": "x.png"},
            ]
        answer.append({"type": "text", "text": "the end"})
        return build_prompt(
            template,
            MMIE,
            _item(task=None, category=category, reference="GT 42"),
            [_response(answer)],
            vision=True,
            resolve_image=lambda p: tmp_path / p,
        )

    msr, sa = render("MSR", 2), render("SA", 2)
    assert "GT 42" in _text(msr) and "GT 42" not in _text(sa)
    assert all(c in _text(sa) for c in MMIE_CRITERIA["SA"])
    assert MMIE_CRITERIA["MSR"][0] in _text(msr)
    four = render("PBL", 4)
    assert (
        len(four.images) == 3 and four.meta == {"truncated": True} and "the end" not in _text(four)
    )
    five = render("PBL", 5)
    assert five.skipped and "more than 4" in five.skipped


def test_pairwise_shows_both_responses_in_the_given_order() -> None:
    first, second = _response("First text.", "i1/a"), _response("Second text.", "i1/b")
    prompt = build_prompt(
        builtin_template("pairwise"),
        PAIRWISE,
        _item(),
        [second, first],
        vision=False,
        resolve_image=_no_images,
    )
    text = _text(prompt)
    assert text.index("## Response A") < text.index("Second text.") < text.index("## Response B")
    assert text.index("## Response B") < text.index("First text.")


def test_answer_spans_locate_each_response_in_the_user_message() -> None:
    # a response that imitates the next header must not move the spans
    tricky = _response("  Three.\n\n## Response B\nfour ", "i1/a")
    plain = _response("Four apples.", "i1/b")
    for protocol, shown in ((PAIRWISE, [tricky, plain]), (ALIGNMMBENCH, [tricky])):
        template = builtin_template(protocol.name)
        prompt = build_prompt(
            template, protocol, _item(), shown, vision=False, resolve_image=_no_images
        )
        text = prompt.messages[1]["content"]
        assert [text[start:end] for start, end in prompt.answer_spans] == [
            response.content.rstrip() if response is shown[-1] else response.content
            for response in shown
        ]


def test_score_prefix_is_the_target_before_the_value() -> None:
    assert score_prefix(builtin_template("alignmmbench")) == '{"Rating": '
    assert score_prefix(builtin_template("mmie", "zh")) == "### Score\n"


def test_user_template_errors_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('id = "mine"\nversion = 1\nprotocol = "alignmmbench"\n', encoding="utf-8")
    with pytest.raises(TemplateError, match=r"mine.toml: missing field\(s\) language, system"):
        load_template(path)
    path.write_text("id = [", encoding="utf-8")
    with pytest.raises(TemplateError, match="not valid TOML"):
        load_template(path)
    with pytest.raises(TemplateError, match="written for protocol 'alignmmbench'"):
        build_prompt(
            builtin_template("alignmmbench"),
            MMIE,
            _item(),
            [_response()],
            vision=False,
            resolve_image=_no_images,
        )
    with pytest.raises(TemplateError, match="language 'fr'"):
        builtin_template("alignmmbench", "fr")


def test_template_files_are_read_by_the_one_reader(tmp_path: Path) -> None:
    """``/dev/zero`` was read until memory ran out, a named pipe blocked for ever."""
    pipe = tmp_path / "pipe.toml"
    os.mkfifo(pipe)
    for path, what in ((Path("/dev/zero"), "a device"), (pipe, "a pipe")):
        with pytest.raises(TemplateError, match=f"template file {path}: is {what}, not a regular"):
            load_template(path)
    with pytest.raises(TemplateError, match="absent.toml: cannot read it"):
        load_template(tmp_path / "absent.toml")
