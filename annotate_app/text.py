"""Stored text (names, rationales, model output) where Streamlit reads Markdown.

Streamlit parses every string given to ``st.markdown``, titles, captions, alerts and widget labels
as GitHub-flavoured Markdown in the browser: react-markdown with remark-gfm, remark-math,
remark-directive (``:red[…]``), remark-emoji and Streamlit's own plugins (``:material/…:`` and
``:streamlit:`` icons, Mermaid charts for ```` ```mermaid ```` code). Nothing the data holds — a
judge's or user's name, a rationale, a model's answer, campaign instructions — may become an
image, a link, HTML or math there. Two functions decide what stored text becomes:

* :func:`escape_markdown` — a name or a message: one line of literal text.
* :func:`safe_markdown` — longer text that keeps its paragraphs, headings, lists, block quotes,
  emphasis, code and tables. A CommonMark parser (markdown-it-py, with GFM tables and
  strikethrough) reads it, and it is written back with those constructs only; links, images and
  autolinks are written back as the literal characters that made them, HTML was never parsed as
  HTML, and everything else is literal text.

Literal text is made in one place, :func:`_literal`: every ASCII punctuation character is
backslash-escaped (CommonMark 0.31 §2.4: then no delimiter, ``<``, ``$`` or ``:`` can start a
construct), and a word joiner (U+2060, invisible) goes where the browser's plugins search the text
*after* the escapes are gone — GFM autolink literals (``http://``, ``www.``, ``a@b.c``), emoji
shortcodes, ``:streamlit:`` and ``:material/…:`` — so a backslash alone cannot stop them.
Code is re-fenced with a backtick run longer than any inside it, so it ends where the parser
said it ends, whichever parser reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

WORD_JOINER = "\u2060"
_ASCII_PUNCTUATION = re.compile(r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]""")
# ':' before a non-space (http://, :smile:, :material/x:, :streamlit:), before '@' (e-mail
# autolinks), and between 'www' and '.' (www. autolinks): the places the browser's text plugins
# and GFM's autolink literals match on unescaped text.
_JOIN_POINTS = re.compile(r":(?!\s)|(?=@)|(?<=[Ww][Ww][Ww])(?=\.)")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_BACKTICK_RUNS = re.compile(r"`+")
_CODE_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,40}")
# Languages Streamlit renders instead of showing as code (``mermaid`` draws a chart that can hold
# links); their code is shown without a language.
_RENDERED_LANGUAGES = frozenset({"mermaid", "math"})
_MAX_NESTING = 40
_MAX_EMPHASIS = 8
_ALIGN = {"text-align:left": ":---", "text-align:right": "---:", "text-align:center": ":---:"}
_SPACE = Token("text", "", 0, content=" ")  # a line break inside a heading
_PARSER = MarkdownIt("commonmark", {"html": False, "maxNesting": _MAX_NESTING}).enable(
    ["table", "strikethrough"]
)


def escape_markdown(text: str) -> str:
    """``text`` as one line of literal Markdown text: it shows as typed, and nothing in it becomes
    a link, image, HTML, math, emoji, icon, colour or emphasis. Line breaks become spaces."""
    return _literal(_LINE_BREAKS.sub(" ", text))


@lru_cache(maxsize=512)
def safe_markdown(text: str) -> str:
    """``text`` re-written as Markdown whose only constructs are paragraphs, headings, lists, block
    quotes, thematic breaks, emphasis, strikethrough, code and tables; links, images, autolinks
    and HTML show as the characters that were typed.

    Text nested deeper than the parser follows (markdown-it stops at ``maxNesting`` levels and
    drops the rest) is shown whole, as one code block, so nothing typed goes missing.
    """
    tokens = _PARSER.parse(text)
    if any(token.level >= _MAX_NESTING - 1 for token in tokens):
        return "\n".join(_code_block(text.replace("\r\n", "\n").replace("\r", "\n"), ""))
    return "\n".join(_blocks(_tree(tokens), tight=False))


def _literal(text: str) -> str:
    """``text`` with every ASCII punctuation character escaped and word joiners where the
    browser's text plugins would match."""
    joined = _JOIN_POINTS.sub(lambda match: match.group() + WORD_JOINER, text)
    return _ASCII_PUNCTUATION.sub(lambda match: "\\" + match.group(), joined)


@dataclass
class _Node:
    """A block token with the blocks inside it (a paragraph holds its one inline token)."""

    token: Token
    children: list[_Node] = field(default_factory=list)


def _tree(tokens: list[Token]) -> list[_Node]:
    """markdown-it's flat block tokens as a tree (depth at most ``_MAX_NESTING``)."""
    root: list[_Node] = []
    stack = [root]
    for token in tokens:
        if token.nesting == 1:
            node = _Node(token)
            stack[-1].append(node)
            stack.append(node.children)
        elif token.nesting == -1:
            stack.pop()
        else:
            stack[-1].append(_Node(token))
    return root


def _blocks(nodes: list[_Node], *, tight: bool) -> list[str]:
    """Blocks one after another: a blank line between them, none inside a tight list item."""
    lines: list[str] = []
    for node in nodes:
        rendered = _block(node)
        if lines and not tight:
            lines.append("")
        lines.extend(rendered)
    return lines


def _block(node: _Node) -> list[str]:
    token = node.token
    kind = token.type
    if kind == "paragraph_open":
        return _paragraph(_inline_of(node))
    if kind == "heading_open":
        words = _inline([_SPACE if t.type.endswith("break") else t for t in _inline_of(node)])
        return [f"{'#' * int(token.tag[1])} {words.strip()}".rstrip()]
    if kind == "blockquote_open":
        return [f"> {line}" if line else ">" for line in _blocks(node.children, tight=False)]
    if kind in ("bullet_list_open", "ordered_list_open"):
        return _list(node)
    if kind == "fence":
        return _code_block(token.content, token.info)
    if kind == "code_block":
        return _code_block(token.content, "")
    if kind == "hr":
        return ["***"]  # not '---', which under a paragraph line would make it a heading
    if kind == "table_open":
        return _table(node)
    return _paragraph([Token("text", "", 0, content=token.content)])  # anything else: as text


def _inline_of(node: _Node) -> list[Token]:
    inline = node.children[0].token if node.children else None
    return list(inline.children or []) if inline is not None else []


def _paragraph(tokens: list[Token]) -> list[str]:
    # Leading spaces or tabs would make a line indented code; the parser dropped them anyway.
    lines = (line.lstrip(" \t") for line in _inline(tokens).split("\n"))
    return [line for line in lines if line] or [""]


def _inline(tokens: list[Token], *, in_table: bool = False) -> str:
    """Inline tokens, flat (emphasis may nest thousands deep): text literal, emphasis and code
    kept, links and images as the literal text of their Markdown. Emphasis nested deeper than
    ``_MAX_EMPHASIS`` shows its delimiters as text, so the page never gets a DOM thousands of
    elements deep."""
    out: list[str] = []
    closers: list[str] = []  # what each open link ends with
    kept: list[bool] = []  # whether each open emphasis is emphasis (or shown as text)
    for token in tokens:
        kind = token.type
        if kind in ("em_open", "strong_open", "s_open"):
            kept.append(sum(kept) < _MAX_EMPHASIS)
            out.append(token.markup if kept[-1] else _literal(token.markup))
        elif kind in ("em_close", "strong_close", "s_close"):
            out.append(token.markup if kept and kept.pop() else _literal(token.markup))
        elif kind == "softbreak":
            out.append("\n")
        elif kind == "hardbreak":
            out.append("\\\n")
        elif kind == "code_inline":
            # In a table a '|' inside code would end the cell in some parsers: shown as text.
            out.append(_literal(f"`{token.content}`") if in_table else _code_span(token.content))
        elif kind == "link_open" and token.markup == "autolink":
            out.append(_literal("<"))
            closers.append(_literal(">"))
        elif kind == "link_open":
            out.append(_literal("["))
            closers.append(_literal(f"]({_target(token, 'href')})"))
        elif kind == "link_close":
            out.append(closers.pop() if closers else "")
        elif kind == "image":
            out.append(_literal(f"![{token.content}]({_target(token, 'src')})"))
        else:  # text, and anything a later markdown-it may add: its characters, literally
            out.append(_literal(token.content))
    return "".join(out)


def _target(token: Token, attribute: str) -> str:
    target = str(token.attrGet(attribute) or "")
    title = token.attrGet("title")
    return f'{target} "{title}"' if title else target


def _code_span(content: str) -> str:
    """``content`` as a code span whose backtick fence is longer than any run inside it."""
    fence = "`" * (max(map(len, _BACKTICK_RUNS.findall(content)), default=0) + 1)
    pad = " " if content[:1] in ("`", " ") or content[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def _code_block(content: str, info: str) -> list[str]:
    """A fenced code block that only a backtick run longer than any in ``content`` closes."""
    fence = "`" * max(3, max(map(len, _BACKTICK_RUNS.findall(content)), default=0) + 1)
    words = info.split()
    language = words[0] if words else ""
    if not _CODE_LANGUAGE.fullmatch(language) or language.lower() in _RENDERED_LANGUAGES:
        language = ""
    body = content[:-1] if content.endswith("\n") else content
    # split on '\n' only: str.splitlines() would also split on U+2028 and other characters that
    # are not line endings to a Markdown parser, and move text out of the code block.
    return [fence + language, *(body.split("\n") if body else []), fence]


def _list(node: _Node) -> list[str]:
    token = node.token
    ordered = token.type == "ordered_list_open"
    tight = any(
        child.token.hidden for item in node.children for child in item.children
    )  # markdown-it hides the paragraphs of a tight list
    number = int(token.attrGet("start") or 1)
    lines: list[str] = []
    for item in node.children:
        marker = f"{item.token.info or number}{item.token.markup}" if ordered else item.token.markup
        number += 1
        body = _blocks(item.children, tight=tight)
        if lines and not tight:
            lines.append("")
        if not body:
            lines.append(marker)
            continue
        indent = " " * (len(marker) + 1)
        lines.append(f"{marker} {body[0]}")
        lines.extend(f"{indent}{line}" if line else "" for line in body[1:])
    return lines


def _table(node: _Node) -> list[str]:
    rows: list[list[str]] = []
    aligns: list[str] = []
    for section in node.children:  # thead, tbody
        for row in section.children:
            cells = [_inline(_inline_of(cell), in_table=True) for cell in row.children]
            rows.append(cells)
            if section.token.type == "thead_open":
                aligns = [str(cell.token.attrGet("style") or "") for cell in row.children]
    if not rows:
        return []
    delimiter = [_ALIGN.get(align, "---") for align in aligns]
    return [_row(cells) for cells in (rows[0], delimiter, *rows[1:])]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
