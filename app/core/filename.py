"""Chat note file names: `<topic> <YYYY-MM-DD HHmm>.md`, safe on Windows, macOS, Linux and in Obsidian links.

Invariants: a name never holds a path separator, a character Windows or Obsidian links refuse, a control
character, a leading dot (hidden files are ignored by Obsidian) or a Windows reserved device name; it is NFC
(macOS would otherwise store a different byte string) and at most `MAX_NAME_BYTES` bytes of UTF-8, leaving room
for a ` (n)` uniqueness suffix inside the 255-byte limit of common file systems.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from datetime import datetime

MAX_NAME_BYTES = 200
PROVISIONAL_TOPIC = "New chat"
_ILLEGAL = re.compile(r'[<>:"/\\|?*#^\[\]\x00-\x1f\x7f]')
_SPACES = re.compile(r"\s+")
_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{dev}{n}" for dev in ("COM", "LPT") for n in (*"123456789", "¹", "²", "³")]
)
_STAMP = re.compile(r" \d{4}-\d{2}-\d{2} \d{4}(?: \(\d+\))?$")


def sanitize_component(text: str, *, max_bytes: int = MAX_NAME_BYTES, fallback: str = "Untitled") -> str:
    """One file or folder name made safe for every OS and for Obsidian links."""
    clean = unicodedata.normalize("NFC", text)
    clean = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in clean)
    clean = _ILLEGAL.sub(" ", clean)
    clean = _SPACES.sub(" ", clean).strip().lstrip(".").strip()
    clean = truncate_utf8(clean, max_bytes).rstrip(" .")
    if not clean:
        clean = fallback
    if clean.split(".", 1)[0].strip().upper() in _RESERVED:
        clean = "_" + clean
    return clean


def truncate_utf8(text: str, max_bytes: int) -> str:
    """Cut text to at most max_bytes of UTF-8 without splitting a character or leaving a dangling combining mark."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    cut = text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")
    # Never leave a base character without the combining marks that follow it (é written as e + ◌́).
    while cut and unicodedata.combining(text[len(cut)]):
        cut = cut[:-1]
    return cut


def stamp(created: str) -> str:
    """`YYYY-MM-DD HHmm` in local time from an ISO 8601 time; the current time when it cannot be read."""
    try:
        moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        moment = datetime.now()
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H%M")


def chat_file_name(topic: str, created: str) -> str:
    """The file name of a chat note: `<topic> <YYYY-MM-DD HHmm>.md` (a provisional topic until one is set)."""
    suffix = f" {stamp(created)}.md"
    budget = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    return sanitize_component(topic or PROVISIONAL_TOPIC, max_bytes=budget, fallback=PROVISIONAL_TOPIC) + suffix


def is_provisional(name: str) -> bool:
    """True for a name given before the chat had a topic (`New chat <stamp>[ (n)].md`)."""
    stem = name.rsplit("/", 1)[-1].removesuffix(".md")
    return bool(_STAMP.search(stem)) and _STAMP.sub("", stem) == PROVISIONAL_TOPIC


def unique_name(name: str, taken: Iterable[str] | Callable[[str], bool]) -> str:
    """The name, or `<stem> (n).md` with the smallest n ≥ 2 that is free; comparison ignores case (macOS, Windows)."""
    if callable(taken):
        is_taken = taken
    else:
        lowered = {t.casefold() for t in taken}

        def is_taken(candidate: str) -> bool:
            return candidate.casefold() in lowered

    if not is_taken(name):
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    n = 2
    while True:
        candidate = f"{stem} ({n}){'.' + ext if ext else ''}"
        if not is_taken(candidate):
            return candidate
        n += 1
