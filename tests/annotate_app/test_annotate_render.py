"""Segments of CONTENT and the answer panel's choices, without a browser (what text becomes:
test_safe_markdown.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from annotate_app.components.answer_box import choices_for
from annotate_app.render import segments
from schemas.protocols import ALIGNMMBENCH, MMIE, PAIRWISE, score_protocol


def test_segments_resolve_images_inside_the_data_folder_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data" / "images").mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(tmp_path / "data" / "images" / "a.png")
    (tmp_path / "secret.png").write_bytes(b"not for you")
    content = [
        {"type": "text", "text": "first"},
        {"type": "image", "image": "images/a.png"},
        {"type": "image", "image": "../secret.png"},
        {"type": "image", "image": "/etc/passwd"},
        {"type": "image", "image": "images/gone.png"},
        {"type": "image", "missing": True, "source": "lost.jpg"},
        {"type": "text", "text": "last"},
    ]
    result = segments(content)
    assert [s.kind for s in result] == ["text", "image", "image", "image", "image", "image", "text"]
    assert result[1].path == (tmp_path / "data" / "images" / "a.png").resolve()
    assert all(s.path is None for s in result[2:6])
    assert "outside" in result[2].problem and "absolute" in result[3].problem
    assert result[4].problem == "the file is missing"
    assert result[5].problem == "it was missing when the data was imported"
    assert segments("plain") == segments([{"type": "text", "text": "plain"}])


def test_choices_follow_the_protocol_scale_and_keys() -> None:
    amb = choices_for(ALIGNMMBENCH)
    assert [(c["value"], c["key"]) for c in amb] == [(v, str(v % 10)) for v in range(1, 11)]
    assert amb[0]["hint"] == "Ignores the question or is off topic."
    mmie = choices_for(MMIE)
    assert [c["label"] for c in mmie] == ["0 (0%)", "1 (17%)", "2 (33%)", "3 (50%)", "4 (67%)",
                                          "5 (83%)", "6 (100%)"]  # fmt: skip
    assert [c["key"] for c in choices_for(PAIRWISE)] == ["a", "b", "t"]
    likert = choices_for(score_protocol(1, 5, 1))
    assert [(c["value"], c["key"]) for c in likert] == [(v, str(v)) for v in range(1, 6)]
    tenths = choices_for(score_protocol(0, 1, 0.1))
    assert [c["value"] for c in tenths][:4] == [0.0, 0.1, 0.2, 0.3]
    assert [c["key"] for c in tenths if c["key"]] == ["0", "1"]
    assert choices_for(score_protocol(0, 100, 1)) == []  # 101 points: a number box instead
    assert choices_for(score_protocol(0, 1)) == []  # continuous
