"""Markdown → HTML for QTextBrowser / QLabel: markdown-it-py with wikilinks, citations and line anchors.

Pure functions (no Qt), safe to call in a worker. Raw HTML in notes and replies is escaped (a note or a model must
not inject markup), images are shown as links (the viewer never loads files or URLs by itself). Link schemes the
window handles: `note:<target>` (a wikilink, `#heading` kept), `cite:<n>` (a numbered source of a localSearch
catalog), and http(s) which open in the browser. Top-level blocks carry `<a name="L<line>">` anchors so the viewer
can scroll to a cited line range.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from typing import Any
from urllib.parse import quote, unquote

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.tasklists import tasklists_plugin

_CITATION = re.compile(r"\[\^?(\d{1,4})\]")
_CATALOG_LINE = re.compile(r"^\[(\d+)\] \[\[([^\]]*)\]\] lines (\d+)-(\d+)$", re.M)


@dataclass(frozen=True)
class CatalogEntry:
    """One numbered source of a localSearch catalog: its wikilink target and line range."""

    number: int
    target: str
    start_line: int
    end_line: int


def parse_catalogs(blocks: Iterable[str]) -> dict[int, CatalogEntry]:
    """Numbered sources from localSearch blocks (the last block wins a number, as the model saw it last)."""
    out: dict[int, CatalogEntry] = {}
    for block in blocks:
        for number, target, start, end in _CATALOG_LINE.findall(block.replace("&lt;", "<").replace("&gt;", ">")):
            out[int(number)] = CatalogEntry(int(number), target, int(start), int(end))
    return out


def note_href(target: str) -> str:
    """The href of a wikilink target (`note#heading`, `note#L3-L9` for line ranges)."""
    return "note:" + quote(target, safe="/#- ")


def parse_href(href: str) -> tuple[str, str]:
    """Split an href into (scheme, payload); payload is unquoted."""
    scheme, _, rest = href.partition(":")
    return scheme, unquote(rest)


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    start = state.pos
    embed = state.src.startswith("![[", start)
    opener = start + (1 if embed else 0)
    if not state.src.startswith("[[", opener):
        return False
    close = state.src.find("]]", opener + 2)
    if close < 0:
        return False
    inner = state.src[opener + 2 : close]
    if not inner or "\n" in inner or "[" in inner:
        return False
    if not silent:
        token = state.push("wikilink", "a", 0)
        target, _, alias = inner.partition("|")
        token.meta = {"target": target.strip(), "alias": alias.strip(), "embed": embed}
    state.pos = close + 2
    return True


def _citation_rule(state: StateInline, silent: bool) -> bool:
    numbers: Mapping[int, Any] = state.env.get("citations") or {}
    if not numbers or state.src[state.pos] != "[":
        return False
    match = _CITATION.match(state.src, state.pos)
    if match is None or int(match.group(1)) not in numbers:
        return False
    if not silent:
        token = state.push("citation", "a", 0)
        token.meta = {"number": int(match.group(1))}
    state.pos = match.end()
    return True


def _render_wikilink(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    meta = tokens[idx].meta
    target = meta["target"]
    note, _, heading = target.partition("#")
    label = meta["alias"] or (f"{note.rsplit('/', 1)[-1]} › {heading}" if heading else note.rsplit("/", 1)[-1])
    prefix = "embedded: " if meta["embed"] else ""
    return f'<a class="wikilink" href="{escape(note_href(target))}">{prefix}{escape(label)}</a>'


def _render_citation(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    number = tokens[idx].meta["number"]
    return f'<a class="citation" href="cite:{number}"><sup>[{number}]</sup></a>'


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = token.content or src
    href = src if src.startswith(("http://", "https://")) else note_href(src)
    return f'<a href="{escape(href)}">[image: {escape(alt)}]</a>'


def _line_anchor_rule(renderer_rule: Any) -> Any:
    def render(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        html = str(renderer_rule(tokens, idx, options, env))
        if token.level == 0 and token.map and env.get("line_anchors"):
            return f'<a name="L{token.map[0] + 1}"></a>' + html
        return html

    return render


_ANCHORED = ("paragraph_open", "heading_open", "bullet_list_open", "ordered_list_open", "blockquote_open", "table_open")


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = (
        MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        .enable(["table", "strikethrough"])
        .use(front_matter_plugin)
        .use(footnote_plugin)
        .use(tasklists_plugin)
    )
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.before("link", "citation", _citation_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("citation", _render_citation)
    md.add_render_rule("image", _render_image)
    renderer: Any = md.renderer
    for name in _ANCHORED:
        md.add_render_rule(name, _line_anchor_rule(renderer.renderToken))
    for name in ("fence", "code_block"):
        md.add_render_rule(name, _line_anchor_rule(renderer.rules[name]))
    return md


def render_markdown(
    text: str, *, line_anchors: bool = False, citations: Mapping[int, CatalogEntry] | None = None
) -> str:
    """HTML for a note or a chat message."""
    env: dict[str, Any] = {"line_anchors": line_anchors, "citations": citations or {}}
    try:
        return str(_markdown().render(text, env))
    except Exception:  # a renderer bug must never hide the text: show it escaped instead
        return f"<pre>{escape(text)}</pre>"


def heading_line(text: str, heading: str) -> int:
    """The 1-based line of the first heading whose text matches (case and punctuation folded), or 0."""
    wanted = _fold(heading)
    if not wanted:
        return 0
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        if not in_fence and stripped.startswith("#"):
            title = stripped.lstrip("#").strip().rstrip("#").strip()
            if _fold(title) == wanted:
                return number
    return 0


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def plain_line(line: str) -> str:
    """A source line without markdown punctuation, to locate rendered text in the source."""
    line = re.sub(r"\[\[([^\]|]*\|)?([^\]]*)\]\]", r"\2", line)
    line = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)
    return " ".join(re.sub(r"[#*_`>~|]+|^\s*([-+]|\d+[.)])\s+(\[[ xX]\]\s*)?", " ", line).split())


def locate_lines(source: str, selected: str) -> tuple[int, int] | None:
    """The 1-based line range of source that a selection made in the rendered view came from."""
    wanted = [plain_line(s) for s in selected.replace("\u2029", "\n").splitlines()]
    wanted = [w for w in wanted if w]
    if not wanted:
        return None
    plain = [plain_line(s) for s in source.splitlines()]
    first = _find(plain, wanted[0], 0, first=True)
    if first is None:
        return None
    last = _find(plain, wanted[-1], first, first=False)
    return first + 1, (last if last is not None else first) + 1


def _find(lines: list[str], fragment: str, start: int, *, first: bool) -> int | None:
    probe = fragment[:60] if first else fragment[-60:]
    for index in range(start, len(lines)):
        if probe and probe in lines[index]:
            return index
    return None
