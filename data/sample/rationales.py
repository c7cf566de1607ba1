"""Written reasons for the synthetic judgements: plausible sentences about what a response got
right or wrong, in the item's language, quoting the seed's key fact."""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from data.sample.seeds import ALIGNMMBENCH_TIERS, MMIE_TIERS, Language

if TYPE_CHECKING:
    from data.sample.dataset import ResponseTruth

_TIER_LEVEL: dict[str, float] = {
    **{tier: centre / 6.0 for tier, centre in MMIE_TIERS.items()},
    **{tier: centre / 10.0 for tier, centre in ALIGNMMBENCH_TIERS.items()},
}
"""How good a tier is, as a fraction of its scale (to spot a preference for the worse answer)."""

_HEDGED: dict[Language, tuple[str, ...]] = {
    "en": (
        "Close call. I slightly prefer the {better} response for its wording, though neither "
        "answer is convincing.",
        "Both have problems; on balance the {better} one reads better to me.",
    ),
    "zh": ("两个回答都有问题，权衡之下我稍微倾向于{better}回答的表达方式。",),
}

_POINTWISE: dict[Language, dict[str, tuple[str, ...]]] = {
    "en": {
        "excellent": (
            "Correct and complete: {fact}. Nothing important is missing.",
            "Matches the reference ({fact}) and is clearly organised.",
            "Accurate and detailed; it gets that {fact} and adds only correct detail.",
        ),
        "good": (
            "All steps are there and correct ({fact}), but the text is terse.",
            "Correct overall ({fact}); the pictures fit, the writing could be fuller.",
        ),
        "thin": (
            "The answer is right ({fact}) but very short, with no explanation.",
            "Correct in substance, though it says little beyond the bare answer: {fact}.",
            "Right but thin; a sentence of support would help. Reference: {fact}.",
        ),
        "partial": (
            "Only partly answers the question; it misses that {fact}.",
            "Part of the request is met, but the key point is left out: {fact}.",
            "Some of it is right, yet it stops short of saying that {fact}.",
        ),
        "fair": (
            "Only half of the steps are shown; the rest is waved through. Expected: {fact}.",
            "Starts well but gives up halfway, so the answer is incomplete ({fact}).",
        ),
        "flawed": (
            "More than half of the details are wrong; the picture shows that {fact}.",
            "Several factual errors: it contradicts the image, where {fact}.",
            "Mostly incorrect. The key fact is that {fact}, which the answer gets wrong.",
        ),
        "poor": (
            "The pictures are empty frames and the conclusion does not hold; expected: {fact}.",
            "Text and images do not support each other, and the result is off ({fact}).",
        ),
        "wrong": (
            "On topic but wrong: {fact}, and the answer says otherwise.",
            "The conclusion is incorrect; the correct answer is that {fact}.",
            "It addresses the question but every claim is wrong ({fact}).",
        ),
        "fail": (
            "Does not answer the task at all and has no pictures.",
            "One unrelated sentence; none of the criteria are met.",
        ),
        "off_topic": (
            "Does not answer the question at all; it talks about something else.",
            "Ignores the question and the image content entirely.",
            "Off topic: nothing in it relates to what was asked.",
        ),
    },
    "zh": {
        "excellent": (
            "回答正确且完整：{fact}，没有遗漏任何重要内容。",
            "与参考答案一致（{fact}），条理清楚，表达准确。",
            "内容准确、细节充分，正确指出了{fact}，没有错误。",
        ),
        "thin": (
            "答案正确（{fact}），但过于简略，没有给出任何解释。",
            "结论是对的，只是除了“{fact}”之外几乎没有展开说明。",
        ),
        "partial": (
            "只回答了问题的一部分，遗漏了关键点：{fact}。",
            "部分正确，但没有说明{fact}，只满足了部分要求。",
        ),
        "flawed": (
            "一半以上的细节有误，与图片不符；图中实际是：{fact}。",
            "存在多处事实错误，与图片内容不符；正确的是{fact}。",
        ),
        "wrong": (
            "切题但完全错误：{fact}，而回答给出了相反的结论。",
            "回答虽然切题，但结论是错误的，正确答案应为：{fact}。",
        ),
        "off_topic": (
            "答非所问：回答完全没有回应问题，也没有用到图片中的任何信息。",
            "回答与图片和问题都无关，没有提供任何有用的信息。",
        ),
    },
}

_HOW: dict[Language, dict[str, str]] = {
    "en": {
        "excellent": "is complete and correct",
        "good": "covers every step, if tersely",
        "thin": "is correct but very brief",
        "partial": "answers only part of the question",
        "fair": "stops halfway",
        "flawed": "gets most details wrong",
        "poor": "has empty pictures and a shaky conclusion",
        "wrong": "reaches a wrong answer",
        "fail": "does not attempt the task",
        "off_topic": "does not address the question",
    },
    "zh": {
        "excellent": "完整且正确",
        "thin": "正确但过于简略",
        "partial": "只回答了一部分",
        "flawed": "大部分细节有误",
        "wrong": "结论错误",
        "off_topic": "答非所问",
    },
}


def pointwise_rationale(rng: random.Random, language: Language, tier: str, fact: str) -> str:
    """A reason for a pointwise score of a response in ``tier``."""
    return rng.choice(_POINTWISE[language][tier]).format(fact=fact)


def pairwise_rationale(
    rng: random.Random,
    language: Language,
    verdict: str,
    first_tier: str,
    second_tier: str,
    fact: str,
) -> str:
    """A reason for a preference, written about the order shown (``verdict`` A = first shown).

    When the verdict prefers the worse answer (the rater's noise), the reason is hedged instead of
    praising an answer that is wrong.
    """
    how = _HOW[language]
    if verdict == "tie":
        if language == "zh":
            return f"两个回答水平相当：第一个{how[first_tier]}，第二个{how[second_tier]}。"
        opener = rng.choice(("Hard to separate", "About equally good", "Neither is clearly better"))
        return f"{opener}: the first response {how[first_tier]} and the second {how[second_tier]}."
    first_wins = verdict == "A"
    winner, loser = (first_tier, second_tier) if first_wins else (second_tier, first_tier)
    better, worse = ("first", "second") if first_wins else ("second", "first")
    if language == "zh":
        better, worse = ("第一个", "第二个") if first_wins else ("第二个", "第一个")
    if _TIER_LEVEL[winner] < _TIER_LEVEL[loser]:
        return rng.choice(_HEDGED[language]).format(better=better)
    if language == "zh":
        return f"{better}回答更好：它{how[winner]}，而{worse}{how[loser]}。要点：{fact}。"
    return rng.choice(
        (
            f"The {better} response is better: it {how[winner]}, while the {worse} {how[loser]}. "
            f"Key point: {fact}.",
            f"I prefer the {better} one. The {worse} response {how[loser]}; the {better} "
            f"{how[winner]} ({fact}).",
        )
    )


_REMARKS: dict[Language, dict[str, tuple[str, ...]]] = {
    "en": {
        "high": (
            "I checked it against the image and found nothing to correct.",
            "Easy to follow, and every claim can be verified in the picture.",
            "I would accept this as it stands.",
            "No mistakes that I could find on a second read.",
            "The wording is clear and nothing in it contradicts the image.",
            "Read it twice; the reasoning holds up.",
            "A reader would come away with the right answer.",
            "Nothing important is left for the reader to guess.",
        ),
        "mid": (
            "A fuller explanation would have earned a higher score.",
            "Usable, but I had to fill in the gaps myself.",
            "The core is fine; the rest needs work.",
            "I hesitated between two scores here.",
            "It would pass with one more sentence of support.",
            "Better than nothing, but not complete enough for a top score.",
            "Not wrong as such, just not enough.",
            "The image supports part of it, not all.",
        ),
        "low": (
            "I would not accept this as an answer.",
            "Checking it against the image shows the problem at once.",
            "A reader would be misled by it.",
            "There is little here worth keeping.",
            "I compared it with the picture twice to be sure.",
            "It needs to be redone rather than edited.",
            "The confident tone does not make it right.",
            "Nothing in it helps with the actual question.",
        ),
    },
    "zh": {
        "high": (
            "对照图片检查过，没有需要更正的地方。",
            "表达清楚，每一点都能在图中找到依据。",
            "可以直接采用，无需修改。",
            "重读一遍也没有发现问题。",
            "推理过程站得住脚。",
            "读者能得到正确的答案。",
            "没有需要读者自己猜测的地方。",
            "逐条核对过，都说得通。",
            "内容和图片完全对得上。",
            "换作我来回答也差不多是这样。",
        ),
        "mid": (
            "如果解释再充分一些，分数会更高。",
            "基本可用，但需要读者自己补全。",
            "核心没问题，其余部分还需改进。",
            "我在两个分数之间犹豫了一下。",
            "再补充一句依据就可以了。",
            "还算可以，但不够完整，拿不到高分。",
            "说得不算错，只是不够。",
            "图片只能支持其中一部分说法。",
            "主要意思到了，细节还差一些。",
            "可以用，但还要再补充。",
        ),
        "low": (
            "这样的回答不能接受。",
            "对照图片一看就能发现问题。",
            "读者会被这个回答误导。",
            "几乎没有可以保留的内容。",
            "我对照图片核对了两遍。",
            "需要重写，而不是修改。",
            "语气很肯定，但内容并不对。",
            "对实际问题没有任何帮助。",
            "和图片对照后问题很明显。",
            "这个回答不能作为参考。",
        ),
    },
}
"""Closing remarks of a human rationale, by how good the answer is (a person adds one of
their own; without it, two answers in the same tier about the same fact read alike)."""

_PAIR_REMARKS: dict[Language, tuple[str, ...]] = {
    "en": (
        "I read both twice before deciding.",
        "I compared both with the image first.",
        "I looked at the image before reading either answer.",
        "I reread the question before choosing.",
        "Judged on correctness first, then on clarity.",
        "I went back and forth a little on this one.",
        "Checked the key figures in both answers.",
        "Length did not weigh in my choice.",
    ),
    "zh": (
        "两个回答我都读了两遍。",
        "先对照了图片再做判断。",
        "核对细节后差别就清楚了。",
        "优先看正确性，其次看表达。",
        "这一对我犹豫了一下。",
        "回答长短不影响我的判断。",
    ),
}
"""Closing remarks of a human preference (one per rationale, drawn at random)."""

_TIE_OPENERS: dict[Language, tuple[str, ...]] = {
    "en": (
        "Hard to separate",
        "About equally good",
        "Neither is clearly better",
        "I call it a tie",
        "Too close to choose",
    ),
    "zh": ("两个回答水平相当", "难分高下", "两者差不多", "我认为是平局", "很难取舍"),
}


def _level(tier: str) -> str:
    level = _TIER_LEVEL[tier]
    return "high" if level >= 0.8 else "mid" if level >= 0.5 else "low"


def human_pairwise_rationale(
    rng: random.Random,
    language: Language,
    verdict: str,
    first_tier: str,
    second_tier: str,
    fact: str,
    taken: Sequence[Collection[str]] = (),
) -> str:
    """An annotator's reason for a preference (``verdict`` A = first shown): what each response
    is, in words of their own (several openers, a closing remark), and the unit's key fact.

    A tie says what both are; a preference for the worse answer (the rater's noise) is hedged;
    between two answers of the same tier it says that the edge is small. Not one of ``taken``
    while another wording is left (as :func:`human_pointwise_rationale`)."""
    drafts = [
        _pairwise_reason(rng, language, verdict, first_tier, second_tier, fact)
        for _ in range(_DRAFTS)
    ]
    return _fresh(rng, list(dict.fromkeys(drafts)), taken)


_DRAFTS = 40
"""Wordings of a human pairwise reason drawn to choose from (a verdict has a few dozen)."""


def _pairwise_reason(
    rng: random.Random,
    language: Language,
    verdict: str,
    first_tier: str,
    second_tier: str,
    fact: str,
) -> str:
    how = _HOW[language]
    remark = rng.choice(_PAIR_REMARKS[language])
    if verdict == "tie":
        opener = rng.choice(_TIE_OPENERS[language])
        if language == "zh":
            reason = f"{opener}：第一个{how[first_tier]}，第二个{how[second_tier]}。{remark}"
        else:
            reason = (
                f"{opener}: the first response {how[first_tier]} and the second "
                f"{how[second_tier]}. {remark}"
            )
        return with_fact(reason, language, fact)
    first_wins = verdict == "A"
    winner, loser = (first_tier, second_tier) if first_wins else (second_tier, first_tier)
    if _TIER_LEVEL[winner] == _TIER_LEVEL[loser]:
        if language == "zh":
            better = "第一个" if first_wins else "第二个"
            reason = f"两个回答都{how[winner]}，{better}表达稍清楚一些。{remark}"
        else:
            better = "first" if first_wins else "second"
            reason = (
                f"Both responses {how[winner]}; the {better} is slightly clearer, so it gets "
                f"the edge. {remark}"
            )
        return with_fact(reason, language, fact)
    reason = pairwise_rationale(rng, language, verdict, first_tier, second_tier, fact)
    return with_fact(f"{reason} {remark}" if language == "en" else reason + remark, language, fact)


def spoken_tier(tiers: dict[str, float], language: Language, truth_tier: str, score: float) -> str:
    """The tier whose words describe a response in ``truth_tier`` scored ``score``: its own,
    unless the score lies two or more tiers away; then the tier nearest the score, so that a 9
    never says that most details are wrong, nor a 4 that the answer matches the reference."""
    available = [tier for tier in tiers if tier in _POINTWISE[language]]
    nearest = min(available, key=lambda name: abs(tiers[name] - score))
    if truth_tier not in available:
        return nearest
    far = abs(available.index(nearest) - available.index(truth_tier)) >= 2
    return nearest if far else truth_tier


def human_pointwise_rationale(
    rng: random.Random,
    language: Language,
    tiers: dict[str, float],
    truth_tier: str,
    score: float,
    fact: str,
    taken: Sequence[Collection[str]] = (),
) -> str:
    """An annotator's reason for ``score`` on a response in ``truth_tier``, naming the unit's key
    fact: the words of :func:`spoken_tier`, and a closing remark of their own (one that fits the
    tier). Not one of ``taken`` while another wording is left (sets of texts written: the
    campaign's, then the unit's): two people do not write the same sentences."""
    tier = spoken_tier(tiers, language, truth_tier, score)
    options = [
        with_fact(f"{reason} {remark}" if language == "en" else reason + remark, language, fact)
        for reason in (t.format(fact=fact) for t in _POINTWISE[language][tier])
        for remark in _REMARKS[language][_level(tier)]
    ]
    return _fresh(rng, options, taken)


def _fresh(rng: random.Random, options: list[str], taken: Sequence[Collection[str]]) -> str:
    """One of ``options`` at random, avoiding every text in ``taken`` (sets of texts, the widest
    first: the campaign's, then the unit's); when every option is taken, the next set alone."""
    for start in range(len(taken) + 1):
        fresh = [text for text in options if not any(text in used for used in taken[start:])]
        if fresh:
            return rng.choice(fresh)
    return rng.choice(options)  # no options at all is a bug in the tables above


def with_fact(reason: str, language: Language, fact: str) -> str:
    """``reason``, followed by the key fact when it does not name it (what a person adds)."""
    if fact in reason:
        return reason
    return f"{reason}应为：{fact}。" if language == "zh" else f"{reason} Expected: {fact}."


def gold_explanation(truth: ResponseTruth, score: float) -> str:
    """Why a gold unit's expected score is ``score``: what the response is (its tier), and the
    key fact, in the item's language."""
    how = _HOW[truth.language].get(truth.tier) or _HOW["en"][truth.tier]
    if truth.language == "zh":
        return f"预期 {score:g} 分：回答{how}。要点：{truth.fact}。"
    return f"Expected {score:g}: the response {how}. Key point: {truth.fact}."


def gold_pair_explanation(winner: ResponseTruth, loser: ResponseTruth) -> str:
    """Why one response of a gold pair is the better one, without naming the order (the
    feedback shows the expected answer in the order the annotator saw)."""
    if winner.language == "zh":
        how = _HOW["zh"]
        return (
            f"较好的回答{how.get(winner.tier, _HOW['en'][winner.tier])}，"
            f"另一个{how.get(loser.tier, _HOW['en'][loser.tier])}。要点：{winner.fact}。"
        )
    how = _HOW["en"]
    return (
        f"The better response {how[winner.tier]}; the other {how[loser.tier]}. "
        f"Key point: {winner.fact}."
    )
