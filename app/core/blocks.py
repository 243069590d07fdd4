"""Prompt block syntax: `<tag>` blocks with child fields, and the escaping rule that keeps text inside them.

Escaping rule (reversible): inside a block, any `<` that starts one of Sidenote's reserved tag names (`<content`,
`</note_context`, `<localSearch`, ...) is written `&lt;`; an existing `&lt;` (or `&amp;lt;`, ...) before a
reserved name gains one more `amp;`. So note text can never end a block early or forge one, ordinary text (HTML,
C++ templates, other tags) is left byte-identical, and `unescape_content` restores the original exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

RESERVED_TAGS = (
    "note_context",
    "note_context_error",
    "active_note",
    "active_note_error",
    "selected_text",
    "selected_text_error",
    "url_content",
    "url_content_error",
    "note_context_update",
    "active_note_update",
    "selected_text_update",
    "url_content_update",
    "diff",
    "appended",
    "embedded_note",
    "content",
    "title",
    "path",
    "ctime",
    "mtime",
    "start_line",
    "end_line",
    "url",
    "error",
    "heading",
    "block_id",
    "localSearch",
    "document",
    "guidance",
    "instruction",
    "sources",
    "context_library",
    "note_manifest",
    "summary",
    "tool_result",
    "readNote",
    "listFolder",
    "fetchUrl",
    "readToolResult",
    "system_reminder",
)
_NAMES = "|".join(sorted(RESERVED_TAGS, key=len, reverse=True))
_ESCAPE = re.compile(rf"(<|&(?:amp;)*lt;)(/?(?:{_NAMES}))(?=[\s>/]|$)")
_UNESCAPE = re.compile(rf"&((?:amp;)*)lt;(/?(?:{_NAMES}))(?=[\s>/]|$)")


def escape_content(text: str) -> str:
    """Neutralise reserved tags in text placed inside a block."""

    def repl(m: re.Match[str]) -> str:
        lead = m.group(1)
        if lead == "<":
            return "&lt;" + m.group(2)
        return "&amp;" + lead[1:] + m.group(2)

    return _ESCAPE.sub(repl, text)


def unescape_content(text: str) -> str:
    """Invert `escape_content` exactly."""

    def repl(m: re.Match[str]) -> str:
        amps = m.group(1)
        if not amps:
            return "<" + m.group(2)
        return "&" + amps[len("amp;") :] + "lt;" + m.group(2)

    return _UNESCAPE.sub(repl, text)


def _attrs(attrs: Mapping[str, str]) -> str:
    return "".join(f' {k}="{escape_attr(v)}"' for k, v in attrs.items())


def escape_attr(value: str) -> str:
    """Make a value safe inside a double-quoted attribute."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace("\n", " ")


def render_block(
    tag: str,
    fields: Iterable[tuple[str, str]],
    *,
    content: str | None = None,
    attrs: Mapping[str, str] | None = None,
) -> str:
    """Render `<tag>` with one-line child fields and an optional multi-line `<content>` child."""
    lines = [f"<{tag}{_attrs(attrs or {})}>"]
    for name, value in fields:
        lines.append(f"<{name}>{escape_content(value)}</{name}>")
    if content is not None:
        lines.append("<content>")
        # The closing tag goes on its own line; a note's final newline would only add a blank line.
        lines.append(content.removesuffix("\n"))
        lines.append("</content>")
    lines.append(f"</{tag}>")
    return "\n".join(lines)
