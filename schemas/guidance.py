"""What annotators and judges are told beyond a protocol's bands: AlignMMBench's per-task
guidance (English and Chinese), MMIE's criteria per category, and the image limits of MMIE's
released judge. The protocols themselves (scales, bands, tasks) are :mod:`schemas.protocols`.
"""

ALIGNMMBENCH_TASK_GUIDANCE: dict[str, str] = {
    "Counting": "Any count that differs from the reference is wrong.",
    "Reasoning": "A wrong conclusion keeps the score low, however good the steps look.",
    "Recognition": (
        "The recognised content must match the reference; a faithful translation is fine."
    ),
    "OCR": "The transcribed text must match the reference; a faithful translation is fine.",
    "Chart": "First check that the answer uses the output format the question asked for.",
    "Comparison": "A structured comparison beats a loose one.",
    "Writing": "Judge fluency and interest; a different but good text is not a fault.",
    "Problem": "The problem must actually be solved, not just discussed.",
    "Meme": "The explanation of the joke must carry the same meaning as the reference.",
    "Knowledge": "Extra content that is correct is not an error.",
    "Description": "Extra details that are correct are not errors.",
    "Coherence": "The answer must build on the earlier turns of the dialogue.",
    "Incoherence": (
        "The earlier turns contain a mistake: the answer must notice and correct it, "
        "not merely apologise."
    ),
}
"""Task-specific emphasis for AlignMMBench (our summary of the benchmark's guidance)."""

ALIGNMMBENCH_TASK_GUIDANCE_ZH: dict[str, str] = {
    "Counting": "计数与参考答案不一致即为错误。",
    "Reasoning": "结论错误时，无论过程如何，分数都应偏低。",
    "Recognition": "识别内容必须与参考答案一致，忠实的翻译也算正确。",
    "OCR": "转写的文字必须与参考答案一致，忠实的翻译也算正确。",
    "Chart": "先检查回答是否使用了问题要求的输出格式。",
    "Comparison": "结构化的比较优于松散的比较。",
    "Writing": "关注流畅性和趣味性；与参考不同但质量好的文本不算错误。",
    "Problem": "必须真正解决问题，而不只是讨论问题。",
    "Meme": "对笑点的解释必须与参考答案的含义一致。",
    "Knowledge": "额外且正确的内容不算错误。",
    "Description": "额外且正确的细节不算错误。",
    "Coherence": "回答必须利用前几轮对话的内容。",
    "Incoherence": "前几轮对话中存在错误：回答必须指出并纠正它，而不只是道歉。",
}

MMIE_CRITERIA: dict[str, tuple[str, ...]] = {
    "SA": (
        "Text quality: clear, fluent, correct writing.",
        "Image quality: the images are clear and fit the request.",
        "Text–image coherence: text and images tell the same story.",
        "Narrative quality: the situation is developed convincingly.",
        "Creativity and engagement.",
        "Stylistic consistency across text and images.",
        "Penalty: one point off for emotionally harmful content.",
    ),
    "PBL": (
        "Text quality: clear, fluent, correct writing.",
        "Image quality: the images are clear and fit the request.",
        "Text–image coherence: text and images support each other.",
        "Method quality and practicality of the proposed project steps.",
        "Creativity and engagement.",
        "Stylistic consistency across text and images.",
        "Penalty: one point off for emotionally harmful content.",
    ),
    "MSR": (
        "Correctness of the final answer against the ground truth.",
        "Quality of the reasoning steps.",
        "Correspondence between the reasoning steps and the images.",
    ),
}
"""What MMIE annotators and judges look at, per category (our wording)."""

MMIE_JUDGE_MAX_IMAGES = 3
"""The released MMIE judge keeps at most 3 images of an answer and drops the text after the cut."""
MMIE_JUDGE_SKIP_ABOVE_IMAGES = 4
"""The released MMIE judge skips samples with more than 4 images."""
