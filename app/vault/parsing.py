"""Read a note file safely and parse it into a `Note` (front matter, tags, aliases, headings, links).

Structure comes from markdown-it-py block parsing (with the front matter and footnote plugins): headings and the
text of paragraphs, so `#include` inside code fences is never a tag and links in code are never links. Inline
parsing is skipped on purpose (it is 4x slower and we only need links and tags, which a scan of each block's raw
inline text finds). Bad input never raises out of `parse_note`: broken YAML leaves the body indexed with a warning.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import urllib.parse
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import frontmatter.default_handlers
from markdown_it import MarkdownIt
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from app.vault.note import Heading, Link, Note, note_title

if TYPE_CHECKING:
    from markdown_it.token import Token

log = logging.getLogger(__name__)

# A 20 MB log pasted into a note must not stall indexing; the first few MB are plenty to search.
MAX_NOTE_BYTES = 4_000_000
_BINARY_PROBE = 8192

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
_TAG = re.compile(r"(?<![\w#&/(\[\]`'\"=:.-])#([^\W\d][\w/-]*|\d+[^\W\d][\w/-]*)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")
_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
MEDIA_SUFFIXES = frozenset(
    (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".webp", ".avif", ".mp3", ".wav", ".m4a", ".ogg", ".flac")
    + (".webm", ".mp4", ".mkv", ".mov", ".ogv", ".pdf")
)


class NoteReadError(Exception):
    """A note file could not be read as text (binary, unreadable, vanished)."""


def read_note_text(path: Path, max_bytes: int = MAX_NOTE_BYTES) -> tuple[str, tuple[str, ...]]:
    """Read a note as text with normalised newlines; return the text and warnings about how it was read."""
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise NoteReadError("the file no longer exists") from exc
    except PermissionError as exc:
        raise NoteReadError("permission denied") from exc
    except IsADirectoryError as exc:
        raise NoteReadError("it is a folder, not a file") from exc
    except OSError as exc:
        raise NoteReadError(f"it cannot be read ({exc.strerror or exc})") from exc
    if b"\x00" in data[:_BINARY_PROBE]:
        raise NoteReadError("it looks like a binary file, not markdown text")
    warnings: list[str] = []
    if len(data) > max_bytes:
        data = data[:max_bytes]
        # Cut on a UTF-8 character boundary so the cap never invents a replacement character.
        cut = len(data)
        while cut > len(data) - 4 and cut > 0 and data[cut - 1] & 0xC0 == 0x80:
            cut -= 1
        if cut > 0 and data[cut - 1] >= 0xC0:
            cut -= 1
        data = data[:cut]
        warnings.append(f"the note is larger than {max_bytes:,} bytes; only the start is indexed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        warnings.append("the note is not valid UTF-8; undecodable bytes were replaced")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return text, tuple(warnings)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark").use(front_matter_plugin).use(footnote_plugin)
    md.core.ruler.disable("inline")
    return md


def parse_note(path: str, text: str, *, mtime: float = 0.0, ctime: float = 0.0, warnings: tuple[str, ...] = ()) -> Note:
    """Parse note text; never raises for bad markdown or YAML."""
    notes = list(warnings)
    tokens = _markdown().parse(text)
    meta: dict[str, object] = {}
    body_start = 0
    if tokens and tokens[0].type == "front_matter" and tokens[0].map:
        body_start = tokens[0].map[1]
        meta = _load_yaml(tokens[0].content, path, notes)
    lines = text.split("\n")
    body = "\n".join(lines[body_start:])
    headings: list[Heading] = []
    links: list[Link] = []
    tags: list[str] = list(_list_value(meta.get("tags", meta.get("tag"))))
    for index, token in enumerate(tokens):
        if token.type != "inline" or not token.map:
            continue
        first_line = token.map[0] + 1
        parent = tokens[index - 1] if index else None
        if parent is not None and parent.type == "heading_open":
            headings.append(Heading(int(parent.tag[1:]), _HTML_TAG.sub("", token.content).strip(), first_line))
        _scan_inline(token, first_line, links, tags)
    aliases = _list_value(meta.get("aliases", meta.get("alias")))
    return Note(
        path=path,
        title=note_title(path),
        text=text,
        body=body,
        body_start_line=body_start + 1,
        aliases=tuple(dict.fromkeys(aliases)),
        tags=tuple(dict.fromkeys(t.lstrip("#") for t in tags if t.lstrip("#"))),
        frontmatter=meta,
        headings=tuple(headings),
        links=tuple(links),
        mtime=mtime,
        ctime=ctime,
        date=_note_date(path, meta),
        warnings=tuple(notes),
    )


def _load_yaml(raw: str, path: str, warnings: list[str]) -> dict[str, object]:
    try:
        loaded = frontmatter.default_handlers.YAMLHandler().load(raw)
    except Exception as exc:  # noqa: BLE001 - any YAML error: keep the body, report the reason
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning("Broken front matter in %s (%s); indexing the body only", path, reason)
        warnings.append(f"the front matter is not valid YAML ({reason}); only the body is used")
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        warnings.append("the front matter is not a key/value mapping; it is ignored")
        return {}
    return {str(k): v for k, v in loaded.items()}


def _list_value(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in re.split(r"[,\s]+" if "," not in value else r",", value) if part.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _scan_inline(token: Token, first_line: int, links: list[Link], tags: list[str]) -> None:
    content = _CODE_SPAN.sub(lambda m: "\0" * len(m.group(0)), token.content)
    for match in _WIKILINK.finditer(content):
        line = first_line + content.count("\n", 0, match.start())
        links.append(parse_wikilink(match.group(2), embed=bool(match.group(1)), line=line))
    for match in _MDLINK.finditer(content):
        raw = match.group(3).strip("<>")
        if _SCHEME.match(raw) or raw.startswith("#"):
            continue
        target, _, anchor = raw.partition("#")
        target = urllib.parse.unquote(target)
        suffix = Path(target).suffix.lower()
        if suffix != ".md" and suffix not in MEDIA_SUFFIXES:
            continue
        line = first_line + content.count("\n", 0, match.start())
        links.append(
            Link(
                target,
                heading=urllib.parse.unquote(anchor),
                alias=match.group(2),
                embed=bool(match.group(1)),
                markdown=True,
                line=line,
            )
        )
    tags.extend(match.group(1).rstrip("/") for match in _TAG.finditer(content))


def parse_wikilink(inner: str, *, embed: bool = False, line: int = 0) -> Link:
    """Split the inside of `[[...]]` into target, heading, block id and alias."""
    target, _, alias = inner.partition("|")
    target, _, anchor = target.partition("#")
    heading, block_id = ("", anchor[1:]) if anchor.startswith("^") else (anchor, "")
    return Link(
        target.strip(), heading=heading.strip(), block_id=block_id.strip(), alias=alias.strip(), embed=embed, line=line
    )


def _note_date(path: str, meta: dict[str, object]) -> str:
    value = meta.get("date")
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    candidates = []
    if isinstance(value, str):
        candidates.append(value.strip()[:10])
    match = _DATE.search(note_title(path))
    if match:
        candidates.append(match.group(1))
    for candidate in candidates:
        try:
            return dt.date.fromisoformat(candidate).isoformat()
        except ValueError:
            continue
    return ""
