"""Cut a note into search chunks: heading-aware sections, small ones merged, large ones split at paragraphs.

Invariants: chunks cover the body in order without overlap; line numbers are 1-based inclusive file lines; a
chunk's `hash` is the sha256 of its embedding text (title + heading path + text), so an unchanged chunk keeps its
hash when lines around it move and is never re-embedded. Code fences are never split in the middle unless a
single fence alone is larger than the hard limit.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from app.vault.note import Note

TARGET_CHARS = 1000
MIN_CHARS = 300
MAX_CHARS = 1600

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Chunk:
    """A piece of a note that is searched and embedded as one unit."""

    path: str
    ordinal: int
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    embed_text: str
    hash: str

    @property
    def heading(self) -> str:
        """The innermost heading ("" before the first heading)."""
        return self.heading_path[-1] if self.heading_path else ""


@dataclass
class _Section:
    heading_path: tuple[str, ...]
    start: int  # index into the note's lines (0-based)
    end: int  # exclusive

    def size(self, lines: list[str]) -> int:
        return sum(len(line) + 1 for line in lines[self.start : self.end])


def chunk_note(note: Note) -> list[Chunk]:
    """Chunk a parsed note's body."""
    lines = note.text.split("\n")
    first = note.body_start_line - 1
    sections = _sections(note, lines, first)
    merged: list[_Section] = []
    for section in sections:
        prev = merged[-1] if merged else None
        if prev and prev.size(lines) < MIN_CHARS and prev.size(lines) + section.size(lines) <= TARGET_CHARS:
            # A short section (often a parent heading's one-line intro) joins the next: keep the outer heading.
            prev.end = section.end
            if len(section.heading_path) < len(prev.heading_path):
                prev.heading_path = section.heading_path
            continue
        merged.append(_Section(section.heading_path, section.start, section.end))
    pieces: list[tuple[tuple[str, ...], int, int]] = []
    for section in merged:
        pieces.extend((section.heading_path, s, e) for s, e in _split(lines, section.start, section.end))
    title = note.display_title
    chunks: list[Chunk] = []
    for heading_path, start, end in pieces:
        while start < end and not lines[start].strip():
            start += 1
        while end > start and not lines[end - 1].strip():
            end -= 1
        if start >= end:
            continue
        text = "\n".join(lines[start:end])
        embed_text = embedding_text(title, heading_path, text)
        digest = hashlib.sha256(embed_text.encode("utf-8", errors="replace")).hexdigest()[:32]
        chunks.append(Chunk(note.path, len(chunks), heading_path, start + 1, end, text, embed_text, digest))
    return chunks


def embedding_text(title: str, heading_path: tuple[str, ...], text: str) -> str:
    """What is embedded for a chunk: the note title and heading path give the text its context."""
    if heading_path:
        return f"{title}\n{' > '.join(heading_path)}\n\n{text}"
    return f"{title}\n\n{text}"


def _sections(note: Note, lines: list[str], first: int) -> list[_Section]:
    headings = [h for h in note.headings if h.line - 1 >= first]
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    start = first
    path: tuple[str, ...] = ()
    for heading in headings:
        index = heading.line - 1
        if index > start:
            sections.append(_Section(path, start, index))
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.text))
        path = tuple(text for _, text in stack)
        start = index
    if start < len(lines):
        sections.append(_Section(path, start, len(lines)))
    return sections


def _split(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Split [start, end) at blank lines outside code fences into pieces near TARGET_CHARS."""
    size = sum(len(line) + 1 for line in lines[start:end])
    if size <= MAX_CHARS:
        return [(start, end)]
    cuts: list[int] = []  # candidate cut indices: a blank line outside a fence
    fence = ""
    for i in range(start, end):
        match = _FENCE.match(lines[i])
        if match:
            marker = match.group(1)
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = ""
        elif not fence and not lines[i].strip():
            cuts.append(i)
    out: list[tuple[int, int]] = []
    piece_start = start
    piece_size = 0
    cut_set = set(cuts)
    for i in range(start, end):
        piece_size += len(lines[i]) + 1
        over = piece_size >= TARGET_CHARS and i in cut_set
        hard = piece_size >= MAX_CHARS * 2
        if (over or hard) and i + 1 < end:
            out.append((piece_start, i + 1))
            piece_start, piece_size = i + 1, 0
    if piece_start < end:
        tail = sum(len(line) + 1 for line in lines[piece_start:end])
        if out and tail < MIN_CHARS:
            out[-1] = (out[-1][0], end)
        else:
            out.append((piece_start, end))
    return out
