"""What stored text becomes in Streamlit's Markdown: never an image, link, HTML or math.

``safe_markdown`` and ``escape_markdown`` are checked by parsing their output again with
markdown-it (CommonMark with raw HTML on, GFM tables and strikethrough) and two extra inline
rules that stand in for the browser's plugins: any unescaped ``$`` outside code counts as math
(remark-math needs more than that) and any unescaped ``:`` as a directive (remark-directive's
``:red[…]``). The text that is left is searched with the patterns Streamlit's own plugins and
GFM's autolink literals use on text nodes *after* escapes are resolved (copied from Streamlit
1.67's bundle: ``mdast-util-gfm-autolink-literal``, remark-emoji, ``:material_…:``,
``:streamlit:``). The browser itself is tested in tests/reliability/test_markdown_browser.py.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from annotate_app.text import WORD_JOINER, escape_markdown, safe_markdown
from tests.badinput.markdown_corpus import markdown_corpus, trap_paths

TARGET = "127.0.0.1:8699"
CORPUS = markdown_corpus(TARGET)
FORBIDDEN = {"image", "link_open", "html_inline", "html_block", "math", "directive"}
TEXT_PATTERNS = {
    "autolink literal": re.compile(r"(https?://|www(?=\.))", re.IGNORECASE),
    "e-mail autolink": re.compile(r"[-.\w+]+@[-\w]+(\.[-\w]+)+"),
    "emoji or icon shortcode": re.compile(r":[\w+/-]+:"),
}


def _flag(kind: str, character: str):  # type: ignore[no-untyped-def]
    def rule(state: StateInline, silent: bool) -> bool:
        if state.src[state.pos] != character:
            return False
        if not silent:
            state.push(kind, "", 0).content = character
        state.pos += 1
        return True

    return rule


def _checker() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.inline.ruler.push("math", _flag("math", "$"))  # reached only by an unescaped '$'
    md.inline.ruler.push("directive", _flag("directive", ":"))
    return md


CHECKER = _checker()


def _tokens(markdown: str) -> list[Token]:
    """Every token of ``markdown``, block and inline, in document order."""
    out: list[Token] = []
    for token in CHECKER.parse(markdown):
        out.append(token)
        out.extend(token.children or [])
    return out


def _text_runs(tokens: list[Token]) -> list[str]:
    """Runs of adjacent text, as the browser's text nodes hold them (escapes resolved)."""
    runs, current = [], []
    for token in tokens:
        if token.type == "text":
            current.append(token.content)
        elif current:
            runs.append("".join(current))
            current = []
    return [*runs, "".join(current)]


def _drawn(info: str) -> bool:
    """A code fence Streamlit draws instead of showing (Mermaid can hold links)."""
    return info.split()[:1] in (["mermaid"], ["math"])


def _problems(markdown: str) -> list[str]:
    tokens = _tokens(markdown)
    found = [f"{t.type} {t.content or t.attrs!r}" for t in tokens if t.type in FORBIDDEN]
    found += [f"fence {t.info}" for t in tokens if t.type == "fence" and _drawn(t.info)]
    for run in _text_runs(tokens):
        found += [f"{name}: {run!r}" for name, p in TEXT_PATTERNS.items() if p.search(run)]
    return found


def _shown(markdown: str) -> str:
    """The characters a reader sees: text and code, without the invisible word joiners."""
    kinds = ("text", "code_inline", "fence", "code_block", "math", "directive")
    return "".join(t.content for t in _tokens(markdown) if t.type in kinds).replace(WORD_JOINER, "")


def test_the_checker_sees_what_the_old_escaping_let_through() -> None:
    """Control: the checks find the payloads in raw Markdown."""
    assert "image" in " ".join(_problems("![t](http://x/t.png)"))
    assert "math" in " ".join(_problems("`x` $x^2$"))
    assert "directive" in " ".join(_problems(r"\[ok\] :red[x]"))
    assert "autolink literal" in " ".join(_problems(r"see http\:\/\/evil\.example"))
    assert "shortcode" in " ".join(_problems(r"\:streamlit\:"))
    assert "html_inline" in " ".join(_problems("a <img src=x> b"))
    assert "fence mermaid" in " ".join(_problems("```mermaid\ngraph TD\n```"))


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_safe_markdown_turns_no_corpus_text_into_markup(name: str) -> None:
    text = CORPUS[name]
    shown = safe_markdown(text)
    assert _problems(shown) == [], shown
    missing = [path for path in trap_paths(text, TARGET) if path not in _shown(shown)]
    assert missing == [], f"{missing} not shown; output:\n{shown}"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_escape_markdown_turns_no_corpus_text_into_markup(name: str) -> None:
    shown = escape_markdown(CORPUS[name])
    assert "\n" not in shown and "\r" not in shown
    assert _problems(shown) == []
    assert [t.type for t in CHECKER.parse(f"**{shown}**") if t.nesting == 1] == ["paragraph_open"]


SPECIALS = st.sampled_from(
    [*"`~$!<>[]()*_:#|\\&-=+. \n\r\u2028\t@wx/1;", "http://e/", "www.", "```", "~~~", "    ",
     "&lt;", "&#33;", "[r]: u\n", "$$\n", ":red[", ":streamlit:", "![a](u)", "<img src=u>",
     "\n- ", "\n> ", "\n1. ", "\n|-|\n"]
)  # fmt: skip


@given(st.lists(SPECIALS, max_size=40).map("".join))
@settings(max_examples=400, deadline=None)
def test_no_mix_of_markdown_specials_becomes_markup(text: str) -> None:
    assert _problems(safe_markdown(text)) == []
    assert _problems(escape_markdown(text)) == []


def test_formatting_of_a_model_answer_is_kept() -> None:
    answer = (
        "# Answer\n\nThere are **three** cats and *one* dog:\n\n"
        "1. first\n2. second\n   - nested `code`\n\n"
        "> quoted\n> line\n\n"
        "```python\nprint('$x <b>')\n```\n\n"
        "| a | b |\n|:--|--:|\n| 1 | ~~2~~ |\n\n---\n\nline one  \nline two\n"
    )
    shown = safe_markdown(answer)
    structure = [(t.type, t.tag, t.info) for t in CHECKER.parse(answer) if t.type != "inline"]
    assert [(t.type, t.tag, t.info) for t in CHECKER.parse(shown) if t.type != "inline"] == (
        structure
    )
    assert _shown(shown) == _shown(answer)
    assert "print('$x <b>')" in shown  # code is kept as written


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<script>alert(1)</script>", r"\<script\>alert\(1\)\<\/script\>"),
        ("costs $5 and $6", r"costs \$5 and \$6"),
        ("![p](http://e.x/p.png)", rf"\!\[p\]\(http\:{WORD_JOINER}\/\/e\.x\/p\.png\)"),
        ("ok `![t](http://h/t.png)``", rf"ok \`\!\[t\]\(http\:{WORD_JOINER}\/\/h\/t\.png\)\`\`"),
        ("inline `<b>` and ``a`b``", "inline `<b>` and ``a`b``"),
        ("`` `x` ``", "`` `x` ``"),
        ("a@b.c :+1: x", rf"a{WORD_JOINER}\@b\.c \:{WORD_JOINER}\+1\: x"),
        ("````\n```\n````", "````\n```\n````"),
        ("~~~\n````\n", "`````\n````\n`````"),
        ("```html\n<div>$x</div>\n```\nthen <i>", "```html\n<div>$x</div>\n```\n\nthen \\<i\\>"),
        ("中文回答：三只猫。", "中文回答：三只猫。"),
        ("", ""),
    ],
)  # fmt: skip
def test_safe_markdown_output(text: str, shown: str) -> None:
    assert safe_markdown(text) == shown


def test_text_nested_deeper_than_the_parser_goes_is_shown_whole_as_code() -> None:
    text = ">" * 60 + " deep ![d](http://x/d.png)\n\nafter"
    shown = safe_markdown(text)
    assert shown == f"```\n{text}\n```"
    assert _problems(shown) == []


def test_emphasis_nests_at_most_eight_deep() -> None:
    bomb = "*" * 3000 + "x" + "*" * 3000
    shown = safe_markdown(bomb)
    depth = deepest = 0
    for token in _tokens(shown):
        depth += token.nesting if token.type.startswith(("em_", "strong_", "s_")) else 0
        deepest = max(deepest, depth)
    assert deepest == 8
    # 3000 '*' a side parse as 1500 nested strong; 8 are kept, 2 × 8 × 2 delimiters used up
    assert _shown(shown).count("*") == 6000 - 2 * 8 * 2
    assert _problems(shown) == []


def test_escape_markdown_shows_a_name_as_typed() -> None:
    name = "gpt-4![j](http://h/j.png) $x$ :red[r] a_b*c* <i>\nsecond line\u2028third"
    shown = escape_markdown(name)
    assert _shown(shown) == name.replace("\n", " ").replace("\u2028", " ")
    assert _problems(shown) == []
