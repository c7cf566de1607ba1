"""Segments of CONTENT and the answer panel's choices, without a browser (what text becomes:
test_safe_markdown.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image

from annotate_app.components.answer_box import choices_for, guide_for, panel_data, store_key
from annotate_app.render import segments
from data.queue import DraftView
from schemas.protocols import ALIGNMMBENCH, MMIE, PAIRWISE, Protocol, score_protocol


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


@pytest.mark.parametrize(
    ("protocol", "hint"),
    [
        (ALIGNMMBENCH, "keys 1–9 choose scores 1–9, 0 chooses 10"),
        (MMIE, "keys 0–6 choose scores 0–6"),  # 0 is 0 here, not 10
        (PAIRWISE, "keys a, b and t choose A, B and tie"),
        (score_protocol(1, 5, 1), "keys 1–5 choose scores 1–5"),
        (score_protocol(0, 1, 0.1), "keys 0 and 1 choose scores 0 and 1"),
        (score_protocol(0, 100, 1), ""),  # typed: no keys
    ],
)
def test_the_key_help_comes_from_the_protocol(protocol: Protocol, hint: str) -> None:
    data = panel_data(unit=1, protocol=protocol, rationale_min=0, draft=None)
    assert protocol.key_hint() == hint
    assert (hint in data["help"]) and ("0 = 10" not in data["help"])
    keyed = {c["key"]: c["value"] for c in data["choices"] if c["key"]}
    listed = {keys for keys, _ in data["shortcuts"]}
    assert set(keyed) <= listed and {"Ctrl+Enter", "Esc", "?"} <= listed


def test_the_readme_describes_the_keys_the_protocols_use() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for protocol in (ALIGNMMBENCH, MMIE, PAIRWISE):
        assert protocol.key_hint() in readme, protocol.name


def test_the_panel_shows_what_each_band_or_pairwise_choice_means() -> None:
    bands = guide_for(MMIE)
    assert [(row["label"], row["values"]) for row in bands] == [
        ("0 (0%)", [0.0]), ("1–2 (17–33%)", [1.0, 2.0]), ("3–4 (50–67%)", [3.0, 4.0]),
        ("5 (83%)", [5.0]), ("6 (100%)", [6.0]),
    ]  # fmt: skip
    assert bands[0]["text"] == "Fails every criterion."
    pairwise = guide_for(PAIRWISE)
    assert [row["values"] for row in pairwise] == [["A"], ["B"], ["tie"]]
    assert "Penalty" not in " ".join(row["text"] for row in pairwise)
    assert "neither is better" in pairwise[2]["text"]


def test_the_panel_gets_the_draft_time_and_the_server_clock() -> None:
    typed = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    draft = DraftView(7.0, None, "half", 3.0, typed.replace(tzinfo=None))  # as SQLite returns it
    data = panel_data(
        unit=5, protocol=ALIGNMMBENCH, rationale_min=0, draft=draft,
        store=store_key(2, 3, 5), now=typed + timedelta(seconds=2),
    )  # fmt: skip
    assert data["draft"]["saved_at"] == round(typed.timestamp() * 1000)
    assert data["server_now"] - data["draft"]["saved_at"] == 2000
    assert (data["store"], data["store_scope"]) == (
        "critiquelab-draft:2:3:5",
        "critiquelab-draft:2:3:",
    )
