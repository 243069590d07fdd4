"""A chat note's Context and Sources lines: context refs and sources shown as links, and links read back.

Invariants: a display line is one line whatever the target holds (`plain`); a note is shown as a wikilink only when
its path survives as one; when Obsidian rewrote such a link because the note was renamed or moved, the rewritten
path wins over the stored one, unless the person edited the line so its links no longer pair up with the refs.
"""

from __future__ import annotations

import re

from app.core.items import ContextRef, RefKind

_WIKILINK = re.compile(r"\[\[([^\[\]|#^\n]+)(?:[#^][^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_LINK_UNSAFE = re.compile(r"[\[\]|#^\n\r%]")
_LINKED_KINDS = (RefKind.NOTE, RefKind.ACTIVE_NOTE, RefKind.SELECTION)


def plain(text: str) -> str:
    """Text for a display-only line: one line, no link brackets, no code ticks, no comment markers."""
    for old, new in (("\r", " "), ("\n", " "), ("[", "("), ("]", ")"), ("`", "'"), ("%%", "%\u200b%")):
        text = text.replace(old, new)
    return text


def _shows_as_wikilink(ref: ContextRef) -> bool:
    """True when the ref is a note whose path survives as a wikilink."""
    target = ref.target
    return ref.kind in _LINKED_KINDS and bool(target) and target == target.strip() and not _LINK_UNSAFE.search(target)


def wikilink(target: str) -> str:
    """A wikilink to a note path, shown by its title."""
    title = target.rsplit("/", 1)[-1]
    title = title[:-3] if title.lower().endswith(".md") else title
    return f"[[{target}|{title}]]" if title != target else f"[[{target}]]"


def ref_display(ref: ContextRef) -> str:
    """One attachment as the Context line shows it."""
    if _shows_as_wikilink(ref):
        link = wikilink(ref.target)
        return f"{link} lines {ref.start_line}–{ref.end_line}" if ref.kind is RefKind.SELECTION else link
    if ref.kind is RefKind.URL and re.fullmatch(r"https?://[^\s<>`\[\]%]+", ref.target):
        return f"<{ref.target}>"
    if ref.kind is RefKind.FOLDER:
        return f"📁 {plain(ref.target)}/"
    if ref.kind is RefKind.TAG:
        return f"🏷️ {plain(ref.target)}"  # no `#`: a chat note must not join the tag's notes in Obsidian
    return plain(ref.label)


def source_display(source: str) -> str:
    """One source as the Sources line shows it."""
    if source.lower().endswith(".md") and not _LINK_UNSAFE.search(source):
        return wikilink(source)
    if re.fullmatch(r"https?://[^\s<>`\[\]%]+", source):
        return f"<{source}>"
    return plain(source)


def ref_to_json(ref: ContextRef) -> list[object]:
    """A ref as the hidden line stores it; `refs_from_json` reads a list of them back."""
    if ref.kind is RefKind.SELECTION:
        return [ref.kind.value, ref.target, ref.start_line, ref.end_line]
    return [ref.kind.value, ref.target]


def refs_from_json(raw: object) -> tuple[ContextRef, ...]:
    """The refs a hidden line stores, skipping entries that were damaged by hand."""
    refs: list[ContextRef] = []
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, list) or len(entry) < 2 or not isinstance(entry[1], str):
            continue
        try:
            kind = RefKind(entry[0])
        except ValueError:
            continue
        if kind is RefKind.SELECTION:
            start, end = (entry[2], entry[3]) if len(entry) >= 4 else (0, 0)
            if isinstance(start, int) and isinstance(end, int):
                refs.append(ContextRef(kind, entry[1], start, end))
            continue
        refs.append(ContextRef(kind, entry[1]))
    return tuple(refs)


def relinked(refs: tuple[ContextRef, ...], display: list[str]) -> tuple[ContextRef, ...]:
    """Take note paths Obsidian rewrote in the Context line (a renamed or moved note) over the stored ones."""
    line = next((d for d in display if d.startswith("**Context:** ")), None)
    linked = [i for i, ref in enumerate(refs) if _shows_as_wikilink(ref)]
    if line is None or not linked:
        return refs
    shown = [m.group(1).strip() for m in _WIKILINK.finditer(line)]
    if len(shown) != len(linked):
        return refs  # the person edited the line by hand: the stored paths are the safer choice
    out = list(refs)
    for index, target in zip(linked, shown, strict=True):
        ref = refs[index]
        if target and target != ref.target:
            if ref.target.lower().endswith(".md") and not target.lower().endswith(".md"):
                target += ".md"
            out[index] = ContextRef(ref.kind, target, ref.start_line, ref.end_line)
    return tuple(out)
